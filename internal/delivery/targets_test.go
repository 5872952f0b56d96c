package delivery

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// publicAddr stands for a receiver on the internet; nothing is ever sent to it.
var publicAddr = netip.MustParseAddr("93.184.215.14")

// testNames is the DNS the target tests see.
var testNames = map[string][]netip.Addr{
	"hooks.example.test":    {publicAddr, netip.MustParseAddr("2606:2800:21f:cb07:6820:80da:af6b:8b2c")},
	"internal.example.test": {netip.MustParseAddr("10.0.0.7")},
	"mixed.example.test":    {publicAddr, netip.MustParseAddr("192.168.1.20")},
	"six.example.test":      {netip.MustParseAddr("::1")},
	"metadata.example.test": {netip.MustParseAddr("169.254.169.254")},
	"localhost":             {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	strict := Targets{Resolver: newTestResolver(t, func(name string) []netip.Addr { return testNames[name] })}
	permissive := Targets{AllowPrivate: true, Resolver: strict.Resolver}

	tests := []struct {
		name    string
		targets Targets
		url     string
		live    bool
		wantErr string // "" when the URL is acceptable; else a phrase of the message
	}{
		{"https, public name, live", strict, "https://hooks.example.test/riskapi?x=1", true, ""},
		{"https, public IPv4 literal", strict, "https://93.184.215.14/hook", true, ""},
		{"https, public IPv6 literal", strict, "https://[2606:4700:4700::1111]:8443/hook", true, ""},
		{"http in test mode", strict, "http://hooks.example.test/hook", false, ""},
		{"upper-case scheme", strict, "HTTPS://hooks.example.test/", true, ""},
		{"http in live mode", strict, "http://hooks.example.test/hook", true, "must use https in live mode"},
		{"other scheme", strict, "ftp://hooks.example.test/", false, `scheme "ftp" is not supported`},
		{"relative path", strict, "/webhooks", false, "must be absolute"},
		{"no scheme", strict, "hooks.example.test/webhooks", false, "must be absolute"},
		{"empty", strict, "", false, "empty"},
		{"not a URL", strict, "https://hooks.example.test/%zz", true, "not a valid URL"},
		{"no host", strict, "https:///path", true, "no host"},
		{"opaque", strict, "https:hooks.example.test", true, "form https://host/path"},
		{"user and password", strict, "https://user:pass@hooks.example.test/", true, "user name or password"},
		{"user only", strict, "https://user@hooks.example.test/", true, "user name or password"},
		{"port out of range", strict, "https://hooks.example.test:70000/", true, "port"},
		{"port zero", strict, "https://hooks.example.test:0/", true, "port"},
		{"2048 characters", strict, "https://hooks.example.test/" + strings.Repeat("a", 2048-27), true, ""},
		{"2049 characters", strict, "https://hooks.example.test/" + strings.Repeat("a", 2049-27), true, "limit is 2048"},
		{"loopback", strict, "https://127.0.0.1/", true, "a loopback address"},
		{"loopback, not .1", strict, "http://127.9.8.7:8080/", false, "a loopback address"},
		{"IPv6 loopback", strict, "https://[::1]/", true, "a loopback address"},
		{"IPv4-mapped loopback", strict, "https://[::ffff:127.0.0.1]/", true, "a loopback address"},
		{"IPv4-mapped private, hex form", strict, "https://[::ffff:a00:1]/", true, "a private address"},
		{"NAT64 of loopback", strict, "https://[64:ff9b::7f00:1]/", true, "a loopback address"},
		{"6to4 of private", strict, "https://[2002:c0a8:101::1]/", true, "a private address"},
		{"RFC 1918 10/8", strict, "https://10.20.30.40/", true, "a private address"},
		{"RFC 1918 172.16/12", strict, "https://172.31.255.1/", true, "a private address"},
		{"RFC 1918 192.168/16", strict, "https://192.168.0.10/", true, "a private address"},
		{"unique local fc00::/7", strict, "https://[fd12:3456::1]/", true, "a private address"},
		{"link-local", strict, "https://169.254.10.10/", true, "a link-local address"},
		{"metadata service", strict, "http://169.254.169.254/latest/meta-data/", false, "cloud metadata service"},
		{"IPv6 link-local", strict, "https://[fe80::1]/", true, "a link-local address"},
		{"unspecified IPv4", strict, "https://0.0.0.0/", true, "an unspecified address"},
		{"unspecified IPv6", strict, "https://[::]/", true, "an unspecified address"},
		{"CGNAT", strict, "https://100.100.1.1/", true, "carrier-grade NAT"},
		{"multicast", strict, "https://239.1.2.3/", true, "a multicast address"},
		{"broadcast", strict, "https://255.255.255.255/", true, "a reserved address"},
		{"name resolving to private", strict, "https://internal.example.test/", true, "resolves to 10.0.0.7, a private address"},
		{"name with one private address among public", strict, "https://mixed.example.test/", true, "resolves to 192.168.1.20, a private address"},
		{"name resolving to IPv6 loopback", strict, "https://six.example.test/", true, "resolves to ::1, a loopback address"},
		{"name resolving to metadata", strict, "https://metadata.example.test/", true, "cloud metadata service"},
		{"localhost", strict, "http://localhost:8080/", false, "a loopback address"},
		{"unknown host", strict, "https://nowhere.example.test/", true, "does not exist"},
		{"allowed private: loopback", permissive, "http://127.0.0.1:8080/hook", false, ""},
		{"allowed private: metadata", permissive, "http://169.254.169.254/", false, ""},
		{"allowed private: still https in live mode", permissive, "http://127.0.0.1:8080/hook", true, "must use https in live mode"},
		{"allowed private: still no user info", permissive, "https://u:p@127.0.0.1/", true, "user name or password"},
		{"allowed private: still absolute", permissive, "localhost:8080/hook", false, "must be absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.targets.CheckURL(context.Background(), tt.url, tt.live)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckURL(%q, live=%v) = %v, want nil", tt.url, tt.live, err)
				}
				return
			}
			var invalid *InvalidURLError
			if !errors.As(err, &invalid) {
				t.Fatalf("CheckURL(%q, live=%v) = %v (%T), want *InvalidURLError", tt.url, tt.live, err, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CheckURL(%q, live=%v) = %q, want it to say %q", tt.url, tt.live, err, tt.wantErr)
			}
		})
	}
}

func TestCheckURLReturnsTheCallersContextError(t *testing.T) {
	t.Parallel()
	targets := Targets{Resolver: newTestResolver(t, func(name string) []netip.Addr { return testNames[name] })}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := targets.CheckURL(ctx, "https://hooks.example.test/", true)
	var invalid *InvalidURLError
	if !errors.Is(err, context.Canceled) || errors.As(err, &invalid) {
		t.Fatalf("CheckURL with a cancelled context = %v, want context.Canceled and not an INVALID_URL verdict", err)
	}
}

// countingServer is a receiver that answers status and counts its requests.
func countingServer(t *testing.T, status int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(status)
	}))
	t.Cleanup(server.Close)
	return server, &hits
}

func TestClientRefusesPrivateAddressesAtConnectTime(t *testing.T) {
	t.Parallel()
	server, hits := countingServer(t, http.StatusOK)

	// CheckURL was never called for this URL: the dialer alone must refuse it.
	_, err := Targets{}.Client(2*time.Second).Post(server.URL, "application/json", strings.NewReader("{}"))
	var blocked *BlockedAddressError
	if !errors.As(err, &blocked) {
		t.Fatalf("POST to %s = %v, want a *BlockedAddressError", server.URL, err)
	}
	if !strings.Contains(err.Error(), "refused to connect to 127.0.0.1, a loopback address") {
		t.Errorf("error %q does not say which address was refused and why", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("receiver got %d requests; the dialer must refuse before connecting", hits.Load())
	}

	// The same request with private targets allowed goes through: the refusal above is the
	// policy's, not a broken client's.
	resp, err := Targets{AllowPrivate: true}.Client(2*time.Second).Post(server.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("POST with AllowPrivate: %v", err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Fatalf("receiver got %d requests with AllowPrivate, want 1", hits.Load())
	}
}

// TestClientCatchesDNSRebinding: the host resolves to a public address when the endpoint is
// validated and to the loopback receiver when the delivery connects.
func TestClientCatchesDNSRebinding(t *testing.T) {
	t.Parallel()
	server, hits := countingServer(t, http.StatusOK)
	var rebound atomic.Bool
	targets := Targets{Resolver: newTestResolver(t, func(name string) []netip.Addr {
		if name != "rebind.example.test" {
			return nil
		}
		if rebound.Load() {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
		}
		return []netip.Addr{publicAddr}
	})}
	serverURL, _ := url.Parse(server.URL)
	hookURL := "http://rebind.example.test:" + serverURL.Port() + "/hook"

	if err := targets.CheckURL(context.Background(), hookURL, false); err != nil {
		t.Fatalf("CheckURL while the name is public: %v", err)
	}
	rebound.Store(true)
	_, err := targets.Client(2*time.Second).Post(hookURL, "application/json", strings.NewReader("{}"))
	var blocked *BlockedAddressError
	if !errors.As(err, &blocked) || blocked.Addr != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("POST after rebinding = %v, want the dialer to refuse 127.0.0.1", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("receiver got %d requests after rebinding, want 0", hits.Load())
	}
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	target, targetHits := countingServer(t, http.StatusOK)
	redirector := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusFound))
	t.Cleanup(redirector.Close)

	resp, err := Targets{AllowPrivate: true}.Client(2*time.Second).Post(redirector.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status = %d, want the 302 itself", resp.StatusCode)
	}
	if targetHits.Load() != 0 {
		t.Errorf("redirect target got %d requests, want 0", targetHits.Load())
	}
}

func TestClientSettings(t *testing.T) {
	t.Parallel()
	client := Targets{}.Client(7 * time.Second)
	if client.Timeout != 7*time.Second || client.Jar != nil {
		t.Errorf("client timeout %s, jar %v; want 7s and no cookie jar", client.Timeout, client.Jar)
	}
	transport := client.Transport.(*http.Transport)
	if transport.Proxy != nil {
		t.Error("transport uses a proxy: the connect-time check would judge the proxy, not the receiver")
	}
	if transport.MaxIdleConnsPerHost != MaxPerEndpoint || transport.TLSHandshakeTimeout <= 0 || transport.TLSHandshakeTimeout > 7*time.Second {
		t.Errorf("MaxIdleConnsPerHost %d, TLSHandshakeTimeout %s; want %d and within the timeout",
			transport.MaxIdleConnsPerHost, transport.TLSHandshakeTimeout, MaxPerEndpoint)
	}
}
