package delivery

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Targets is the policy on where webhooks may be sent. Customers choose the URL and the
// service makes the request from inside its own network, so without this check a webhook
// could read an internal admin page or the cloud metadata service (169.254.169.254) and
// report the answer back in the delivery log: server-side request forgery. The policy is
// applied twice: CheckURL when an endpoint is created or changed, and Client's dialer on
// every connection, because a host can resolve to a public address at validation time and
// to a private one at delivery time (DNS rebinding).
type Targets struct {
	// AllowPrivate turns both checks off, for development against receivers on the same
	// machine or network (RISKAPI_ALLOW_PRIVATE_WEBHOOKS=true). Never in production.
	AllowPrivate bool
	// Resolver looks up host names; nil is net.DefaultResolver.
	Resolver *net.Resolver
}

// MaxURLLength is the longest webhook URL accepted: 2048 characters is what browsers and
// most proxies handle everywhere, and a longer one is almost certainly a mistake.
const MaxURLLength = 2048

// resolveTimeout bounds CheckURL's DNS lookup: a healthy resolver answers in milliseconds,
// and 3 s leaves room for one retransmission without holding the API request for long.
const resolveTimeout = 3 * time.Second

// InvalidURLError is CheckURL's verdict that a URL cannot be a webhook target. Reason says
// what is wrong in plain words, for the API's 400 INVALID_URL response.
type InvalidURLError struct {
	Reason string
}

func (e *InvalidURLError) Error() string { return e.Reason }

func invalidURL(format string, args ...any) error {
	return &InvalidURLError{Reason: fmt.Sprintf(format, args...)}
}

// CheckURL reports whether raw may be a webhook URL of an endpoint in the given mode: an
// absolute URL of at most MaxURLLength characters with scheme https (or http when
// livemode is false, for local testing), a host, a valid port if any, and no user name or
// password; and, unless AllowPrivate is set, a host whose every address is public (see
// BlockedAddressError for the ranges refused). Every address must pass because the
// connection may use any of them.
//
// A URL that fails is reported as *InvalidURLError. The only other error is ctx's own,
// when ctx ends during the DNS lookup; the lookup itself is bounded by 3 s.
func (t Targets) CheckURL(ctx context.Context, raw string, livemode bool) error {
	if len(raw) > MaxURLLength {
		return invalidURL("url is %d characters long; the limit is %d", len(raw), MaxURLLength)
	}
	if strings.TrimSpace(raw) == "" {
		return invalidURL("url is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's message repeats the URL; the caller already has it.
		return invalidURL("url is not a valid URL")
	}
	if !u.IsAbs() {
		return invalidURL("url must be absolute, such as https://example.com/webhooks")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if livemode {
			return invalidURL("url must use https in live mode; http is allowed only for test-mode endpoints")
		}
	default:
		if u.Opaque != "" { // "localhost:8080/hook" parses as scheme "localhost"
			return invalidURL("url must be absolute, such as https://example.com/webhooks")
		}
		return invalidURL("url scheme %q is not supported; use https", u.Scheme)
	}
	if u.Opaque != "" {
		return invalidURL("url must have the form %s://host/path", strings.ToLower(u.Scheme))
	}
	if u.User != nil {
		return invalidURL("url must not contain a user name or password; authenticate requests with the signing secret instead")
	}
	host := u.Hostname()
	if host == "" {
		return invalidURL("url has no host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return invalidURL("url port %q is not a number from 1 to 65535", port)
		}
	}
	if t.AllowPrivate {
		return nil
	}
	addrs, err := t.resolve(ctx, host)
	if err != nil {
		return err
	}
	for _, addr := range addrs {
		if kind, blocked := classifyAddr(addr); blocked {
			if addr.String() == host {
				return invalidURL("url host %s is %s; webhooks must go to a public address", host, kind)
			}
			return invalidURL("url host %s resolves to %s, %s; webhooks must go to a public address", host, addr, kind)
		}
	}
	return nil
}

// resolve returns the addresses of host, an IP literal or a name.
func (t Targets) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if addr, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{addr}, nil
	}
	resolver := t.Resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	lookupCtx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := resolver.LookupNetIP(lookupCtx, "ip", host)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("check webhook url: %w", ctx.Err())
		}
		var dnsErr *net.DNSError
		switch {
		case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
			return nil, invalidURL("url host %s does not exist (DNS lookup found no such host)", host)
		case lookupCtx.Err() != nil || (errors.As(err, &dnsErr) && dnsErr.IsTimeout):
			return nil, invalidURL("url host %s could not be resolved within %s", host, resolveTimeout)
		default:
			return nil, invalidURL("url host %s could not be resolved", host)
		}
	}
	if len(addrs) == 0 {
		return nil, invalidURL("url host %s has no addresses", host)
	}
	return addrs, nil
}

// BlockedAddressError is the dialer's refusal to connect to a non-public address. The
// delivery's error text says which address and why.
type BlockedAddressError struct {
	Addr netip.Addr
	Kind string // what it is, as a noun phrase: "a loopback address", "a private address", …
}

func (e *BlockedAddressError) Error() string {
	return fmt.Sprintf("refused to connect to %s, %s", e.Addr, e.Kind)
}

// blockedRange is one range of addresses a webhook may not reach, and the word for it.
type blockedRange struct {
	prefix netip.Prefix
	kind   string
}

// blockedRanges lists every non-public range (IANA's special-purpose registries, RFC 6890)
// that a connection could actually reach: loopback, RFC 1918 and unique-local private
// networks, link-local (the cloud metadata services at 169.254.169.254 and fd00:ec2::254 live
// there and in fc00::/7), unspecified (0.0.0.0 connects to the local host on Linux),
// carrier-grade NAT, multicast, and the reserved, benchmarking and documentation ranges that
// no public receiver uses. More specific ranges come first so that the message names them.
// IPv6 forms that embed an IPv4 address (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4
// 2002::/16) are judged by the embedded address in classifyAddr.
var blockedRanges = func() []blockedRange {
	table := []struct{ cidr, kind string }{
		{"169.254.169.254/32", "the cloud metadata service (link-local)"},
		{"fd00:ec2::254/128", "the cloud metadata service (private)"},
		{"0.0.0.0/8", "an unspecified address"},
		{"10.0.0.0/8", "a private address"},
		{"100.64.0.0/10", "a shared (carrier-grade NAT) address"},
		{"127.0.0.0/8", "a loopback address"},
		{"169.254.0.0/16", "a link-local address"},
		{"172.16.0.0/12", "a private address"},
		{"192.0.0.0/24", "a reserved address"},
		{"192.0.2.0/24", "a documentation-only address"},
		{"192.168.0.0/16", "a private address"},
		{"198.18.0.0/15", "a reserved (benchmarking) address"},
		{"198.51.100.0/24", "a documentation-only address"},
		{"203.0.113.0/24", "a documentation-only address"},
		{"224.0.0.0/4", "a multicast address"},
		{"240.0.0.0/4", "a reserved address"}, // and 255.255.255.255, broadcast
		{"::/128", "an unspecified address"},
		{"::1/128", "a loopback address"},
		{"::/96", "a reserved (IPv4-compatible) address"},
		{"64:ff9b:1::/48", "a reserved (local NAT64) address"},
		{"100::/64", "a reserved (discard-only) address"},
		{"2001:db8::/32", "a documentation-only address"},
		{"fc00::/7", "a private address"},
		{"fe80::/10", "a link-local address"},
		{"fec0::/10", "a site-local address"},
		{"ff00::/8", "a multicast address"},
	}
	out := make([]blockedRange, len(table))
	for i, r := range table {
		out[i] = blockedRange{prefix: netip.MustParsePrefix(r.cidr), kind: r.kind}
	}
	return out
}()

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// classifyAddr says whether addr is refused as a webhook target, and what it is in the
// words of an error message ("a private address").
func classifyAddr(addr netip.Addr) (kind string, blocked bool) {
	addr = addr.WithZone("")
	if addr.Is4In6() {
		return classifyAddr(addr.Unmap())
	}
	if addr.Is6() {
		b := addr.As16()
		switch {
		case nat64Prefix.Contains(addr):
			return classifyAddr(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(addr):
			return classifyAddr(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	for _, r := range blockedRanges {
		if r.prefix.Contains(addr) {
			return r.kind, true
		}
	}
	return "a public address", false
}

// controlDial is the dialer's Control hook: it runs after DNS resolution, with the very
// address about to be connected to, so no later lookup can swap in another one.
func controlDial(_, address string, _ syscall.RawConn) error {
	addrPort, err := netip.ParseAddrPort(address)
	if err != nil {
		// Fail closed: a dial to something that is not ip:port is not one we can judge.
		return fmt.Errorf("refused to connect to %q: not an IP address", address)
	}
	if kind, blocked := classifyAddr(addrPort.Addr()); blocked {
		return &BlockedAddressError{Addr: addrPort.Addr().WithZone(""), Kind: kind}
	}
	return nil
}

// Transport limits of Client. MaxPerEndpoint is the contract's cap on concurrent requests to
// one endpoint, so keeping that many idle connections per host lets a busy endpoint reuse
// every one of them; 256 idle in all covers 32 busy hosts.
const (
	MaxPerEndpoint       = 8
	maxIdleConns         = 256
	idleConnTimeout      = 90 * time.Second
	tlsHandshakeTimeout  = 10 * time.Second
	maxResponseHeaderLen = 64 << 10
	dialKeepAlive        = 30 * time.Second
)

// Client returns the HTTP client deliveries are sent with. timeout bounds a whole attempt
// (connecting, TLS, sending the body, and reading the status and up to 64 KiB of body); the
// contract's default is 10 s (RISKAPI_WEBHOOK_TIMEOUT).
//
// Unless AllowPrivate is set, the dialer checks every address it connects to and refuses
// the non-public ones with *BlockedAddressError (wrapped in the request's error), which
// catches DNS rebinding. The client never follows redirects (a 3xx is returned as the
// response and counts as a failed attempt, so a receiver cannot redirect a delivery into a
// private network), keeps no cookies, and ignores HTTP_PROXY and friends: a proxy would
// make the connect-time check look at the proxy instead of the receiver.
func (t Targets) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{
		Timeout:   min(timeout, tlsHandshakeTimeout),
		KeepAlive: dialKeepAlive,
		Resolver:  t.Resolver,
	}
	if !t.AllowPrivate {
		dialer.Control = controlDial
	}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    min(timeout, tlsHandshakeTimeout),
		ResponseHeaderTimeout:  timeout,
		MaxIdleConns:           maxIdleConns,
		MaxIdleConnsPerHost:    MaxPerEndpoint,
		IdleConnTimeout:        idleConnTimeout,
		MaxResponseHeaderBytes: maxResponseHeaderLen,
		// Response bodies are discarded unread beyond 64 KiB; asking for gzip would only
		// make receivers compress them.
		DisableCompression: true,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
