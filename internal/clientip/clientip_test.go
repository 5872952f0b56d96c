package clientip

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestClientIPBehindTrustedProxies(t *testing.T) {
	t.Parallel()
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, c := range []struct{ remote, xff, want string }{
		{"203.0.113.7:5000", "198.51.100.1", "203.0.113.7"},         // untrusted peer: its header is ignored
		{"10.1.2.3:5000", "198.51.100.1", "198.51.100.1"},           // trusted proxy
		{"10.1.2.3:5000", "198.51.100.1, 10.9.9.9", "198.51.100.1"}, // two proxies deep
		{"10.1.2.3:5000", "6.6.6.6, 198.51.100.1", "198.51.100.1"},  // a spoofed left entry is not believed
		{"10.1.2.3:5000", "", "10.1.2.3"},                           // no header
		{"10.1.2.3:5000", "garbage, 198.51.100.1", "198.51.100.1"},  // garbage beyond the real client
		{"[2001:db8::1]:443", "198.51.100.1", "2001:db8::1"},        // IPv6 peer
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := Of(r, trusted); got != c.want {
			t.Errorf("remote %s, X-Forwarded-For %q: client %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
}
