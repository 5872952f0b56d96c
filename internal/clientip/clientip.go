// Package clientip finds the address of the client that sent a request: the connection's
// peer, or, behind trusted reverse proxies, the nearest X-Forwarded-For entry that is not
// one of them. The API counts failed authentication per client address with it, and the
// dashboard throttles sign-ins and sign-ups.
package clientip

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Of is the address of the client that sent r: the connection's peer, or, when the peer is
// one of the trusted proxies, the nearest X-Forwarded-For entry that is not itself a
// trusted proxy. Entries left of a malformed one are not believed.
func Of(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !isTrusted(peer, trusted) {
		return host
	}
	forwarded := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(forwarded) - 1; i >= 0; i-- {
		addr, err := netip.ParseAddr(strings.TrimSpace(forwarded[i]))
		if err != nil {
			break // a malformed entry: trust nothing beyond it
		}
		if !isTrusted(addr, trusted) {
			return addr.String()
		}
	}
	return host
}

func isTrusted(addr netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}
