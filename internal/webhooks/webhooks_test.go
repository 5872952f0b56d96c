package webhooks

import (
	"encoding/base64"
	"strings"
	"testing"
)

// NewSecret suggests whsec_ and the base64 of 32 random bytes: a secret the API accepts and
// the stock Standard Webhooks libraries decode into a 32-byte key.
func TestNewSecret(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		secret := NewSecret()
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if !strings.HasPrefix(secret, "whsec_") || err != nil || len(key) != 32 {
			t.Fatalf("NewSecret = %q: want whsec_ and the base64 of 32 bytes (%d bytes, %v)", secret, len(key), err)
		}
		if e := checkSecret(secret); e != nil {
			t.Fatalf("NewSecret = %q, which the API refuses: %v", secret, e)
		}
		if seen[secret] {
			t.Fatalf("NewSecret repeated %q", secret)
		}
		seen[secret] = true
	}
}
