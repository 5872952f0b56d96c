package delivery

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// DNS message constants (RFC 1035 §4.1).
const (
	dnsTypeA     = 1
	dnsTypeAAAA  = 28
	dnsClassIN   = 1
	dnsHeaderLen = 12
	// QR (response), AA (authoritative), RD (copied), RA: the Go resolver treats an
	// empty answer without AA or RA as a lame referral.
	dnsResponseFlags = 0x8580
	dnsNXDomain      = 3
)

// newTestResolver starts a DNS server on 127.0.0.1 that answers A and AAAA questions from
// answer (nil: the name does not exist) and returns a resolver that asks only it, so tests
// decide what any host name resolves to, and can change it between lookups as a DNS
// rebinding attacker would. The server stops when the test ends.
func newTestResolver(t *testing.T, answer func(name string) []netip.Addr) *net.Resolver {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for test DNS: %v", err)
	}
	var served sync.WaitGroup
	served.Go(func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return // closed at cleanup
			}
			if resp := dnsResponse(buf[:n], answer); resp != nil {
				_, _ = conn.WriteTo(resp, from)
			}
		}
	})
	t.Cleanup(func() {
		_ = conn.Close()
		served.Wait()
	})
	server := conn.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", server)
		},
	}
}

// dnsResponse answers a one-question query, or returns nil for one it cannot parse.
func dnsResponse(query []byte, answer func(name string) []netip.Addr) []byte {
	if len(query) < dnsHeaderLen {
		return nil
	}
	var labels []string
	i := dnsHeaderLen
	for {
		if i >= len(query) {
			return nil
		}
		n := int(query[i])
		i++
		if n == 0 {
			break
		}
		if i+n > len(query) {
			return nil
		}
		labels = append(labels, string(query[i:i+n]))
		i += n
	}
	if i+4 > len(query) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(query[i:])
	question := query[dnsHeaderLen : i+4]
	addrs := answer(strings.ToLower(strings.Join(labels, ".")))

	var records [][]byte
	for _, a := range addrs {
		var rdata []byte
		switch {
		case qtype == dnsTypeA && a.Is4():
			rdata = a.AsSlice()
		case qtype == dnsTypeAAAA && a.Is6():
			rdata = a.AsSlice()
		default:
			continue
		}
		rr := []byte{0xc0, dnsHeaderLen} // name: pointer to the question's
		rr = binary.BigEndian.AppendUint16(rr, qtype)
		rr = binary.BigEndian.AppendUint16(rr, dnsClassIN)
		rr = binary.BigEndian.AppendUint32(rr, 0) // TTL 0: nothing is cached
		rr = binary.BigEndian.AppendUint16(rr, uint16(len(rdata)))
		records = append(records, append(rr, rdata...))
	}
	flags := uint16(dnsResponseFlags)
	if addrs == nil {
		flags |= dnsNXDomain
	}
	resp := append([]byte{}, query[0:2]...) // id
	resp = binary.BigEndian.AppendUint16(resp, flags)
	resp = binary.BigEndian.AppendUint16(resp, 1) // questions
	resp = binary.BigEndian.AppendUint16(resp, uint16(len(records)))
	resp = binary.BigEndian.AppendUint16(resp, 0) // authority
	resp = binary.BigEndian.AppendUint16(resp, 0) // additional
	resp = append(resp, question...)
	for _, rr := range records {
		resp = append(resp, rr...)
	}
	return resp
}

func TestTestResolver(t *testing.T) {
	t.Parallel()
	resolver := newTestResolver(t, func(name string) []netip.Addr {
		if name == "both.example.test" {
			return []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}
		}
		return nil
	})
	addrs, err := resolver.LookupNetIP(context.Background(), "ip", "both.example.test")
	if err != nil || len(addrs) != 2 {
		t.Fatalf("lookup = %v, %v; want both addresses", addrs, err)
	}
	_, err = resolver.LookupNetIP(context.Background(), "ip", "missing.example.test")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("lookup of a missing name = %v, want not found", err)
	}
}
