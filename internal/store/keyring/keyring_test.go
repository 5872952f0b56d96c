package keyring

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func mustParse(t *testing.T, s string) []byte {
	t.Helper()
	raw, err := ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	keyA, keyB := mustParse(t, NewKey()), mustParse(t, NewKey())
	ringA, err := New(keyA)
	if err != nil {
		t.Fatal(err)
	}
	secret, aad := []byte("whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="), []byte("row we_1")
	id, sealed := ringA.Seal(secret, aad)
	if id != KeyID(keyA) || id != ringA.CurrentID() {
		t.Fatalf("sealed under %s, want the current key %s", id, KeyID(keyA))
	}
	if bytes.Contains(sealed, secret) || bytes.Contains(sealed, secret[6:]) {
		t.Fatal("the sealed form contains the secret")
	}
	if got, err := ringA.Open(id, sealed, aad); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, again := ringA.Seal(secret, aad); bytes.Equal(again, sealed) {
		t.Fatal("two seals of one secret are equal: the nonce is not fresh")
	}

	// A ring whose current key is B and previous key A opens A's secrets and seals under B.
	ringB, err := New(keyB, keyA)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ringB.Open(id, sealed, aad); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("previous key: Open = %q, %v", got, err)
	}
	if idB, _ := ringB.Seal(secret, aad); idB != KeyID(keyB) || !ringB.Knows(id) || !ringB.Knows(idB) {
		t.Fatalf("ring B seals under %s, want %s", idB, KeyID(keyB))
	}

	onlyB, _ := New(keyB)
	if _, err := onlyB.Open(id, sealed, aad); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: Open = %v, want ErrUnknownKey", err)
	}
	if _, err := ringA.Open(id, sealed, []byte("row we_2")); err == nil {
		t.Error("Open with another row's additional data succeeded")
	}
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	if _, err := ringA.Open(id, tampered, aad); err == nil {
		t.Error("Open of an altered ciphertext succeeded")
	}
	if _, err := ringA.Open(id, sealed[:10], aad); err == nil {
		t.Error("Open of a truncated ciphertext succeeded")
	}
}

func TestKeyID(t *testing.T) {
	t.Parallel()
	a, b := mustParse(t, NewKey()), mustParse(t, NewKey())
	if KeyID(a) != KeyID(bytes.Clone(a)) || KeyID(a) == KeyID(b) || len(KeyID(a)) != 16 {
		t.Fatalf("KeyID: %s %s", KeyID(a), KeyID(b))
	}
	if strings.Contains(base64.StdEncoding.EncodeToString(a), KeyID(a)) {
		t.Fatal("the key id is part of the key")
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	raw := bytes.Repeat([]byte{0xa7}, KeySize)
	for _, s := range []string{
		base64.StdEncoding.EncodeToString(raw),
		base64.RawStdEncoding.EncodeToString(raw),
		" " + base64.StdEncoding.EncodeToString(raw) + "\n", // as pasted from a file
	} {
		if got, err := ParseKey(s); err != nil || !bytes.Equal(got, raw) {
			t.Errorf("ParseKey(%q) = %x, %v", s, got, err)
		}
	}
	for _, s := range []string{
		"",
		base64.StdEncoding.EncodeToString(raw[:16]),
		base64.StdEncoding.EncodeToString(append(raw, 1)),
		base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, KeySize)),
		"not a key at all, but secret-looking text",
	} {
		_, err := ParseKey(s)
		if err == nil {
			t.Errorf("ParseKey(%q) succeeded", s)
			continue
		}
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("ParseKey's error repeats the value: %v", err)
		}
	}
	if _, err := New(raw[:16]); err == nil {
		t.Error("New with a 16-byte key succeeded")
	}
	if _, err := New(raw, raw[:5]); err == nil {
		t.Error("New with a short previous key succeeded")
	}
}
