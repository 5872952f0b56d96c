package delivery

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"riskapi/internal/store"

	"riskapi/webhook"
)

// UserAgent identifies delivery requests; the number changes only if the request format does.
const UserAgent = "riskapi-webhooks/1"

// maxResponseBody is how much of a response body is read (and thrown away) so that the
// connection can be reused: receivers answer with a few bytes, and a receiver that streams
// more than 64 KiB gets its connection closed instead of tying up a worker.
const maxResponseBody = 64 << 10

// maxRetryAfter is the longest Retry-After honoured: 24 h, the longest wait of
// DefaultSchedule. The contract says a delivery is postponed by at least the Retry-After,
// so a longer one ends the delivery (failed, retryable by hand) rather than being cut
// short, or leaving it pending for as long as any receiver likes.
const maxRetryAfter = 24 * time.Hour

// maxErrorText bounds the error text stored with an attempt and shown in the delivery log.
const maxErrorText = 200

// attemptResult is what one request produced, before the retry schedule is applied.
type attemptResult struct {
	statusCode int
	errText    string // "" on success
	succeeded  bool
	gone       bool          // 410: disable the endpoint, no further attempts
	retryAfter time.Duration // from a 429 or 503 with Retry-After; 0 if none
}

// outcomeLabel is the attempts_total label of r.
func (r attemptResult) outcomeLabel() string {
	switch {
	case r.succeeded:
		return "succeeded"
	case r.gone:
		return "gone"
	}
	return "failed"
}

// send makes one delivery attempt of c with client, whose Timeout (timeout) bounds it; now
// dates the attempt's Standard Webhooks signature and a Retry-After given as an HTTP-date.
// The payload is sent exactly as stored, so every attempt carries the same bytes and the
// same X-Webhook-Signature; webhook-timestamp and webhook-signature are those of this
// attempt, so a receiver can refuse a replay of an earlier one.
func send(ctx context.Context, client *http.Client, timeout time.Duration, now func() time.Time, c store.ClaimedDelivery) attemptResult {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(c.Payload))
	if err != nil {
		// Only a URL the API should have refused gets here; url.Parse's text repeats it.
		return attemptResult{errText: "invalid endpoint URL"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(webhook.HeaderEventID, c.EventID)
	req.Header.Set(webhook.HeaderDeliveryID, c.ID)
	req.Header.Set(webhook.HeaderEventType, c.EventType)
	req.Header.Set(webhook.HeaderSignature, webhook.SignHex(c.Payload, c.Secret))
	signedAt := now()
	req.Header.Set(webhook.HeaderWebhookID, c.EventID)
	req.Header.Set(webhook.HeaderWebhookTimestamp, strconv.FormatInt(signedAt.Unix(), 10))
	req.Header.Set(webhook.HeaderWebhookSignature, webhook.Sign(c.EventID, signedAt, c.Payload, c.Secret))

	resp, err := client.Do(req)
	if err != nil {
		return attemptResult{errText: describeRequestError(err, timeout)}
	}
	// Drain (bounded) before closing so that the connection goes back to the pool; a read
	// error here changes nothing, since the status has arrived.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
	_ = resp.Body.Close()
	return classifyResponse(resp.StatusCode, resp.Header.Get("Retry-After"), now())
}

// classifyResponse turns a received status into an attempt result.
func classifyResponse(status int, retryAfterHeader string, now time.Time) attemptResult {
	r := attemptResult{statusCode: status}
	switch {
	case status >= 200 && status < 300:
		r.succeeded = true
	case status >= 300 && status < 400:
		r.errText = fmt.Sprintf("redirect not followed (HTTP %d)", status)
	case status == http.StatusGone:
		r.gone = true
		r.errText = "HTTP 410 Gone: endpoint disabled"
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		r.errText = fmt.Sprintf("HTTP %d", status)
		if wait, ok := parseRetryAfter(retryAfterHeader, now); ok {
			r.retryAfter = wait
			r.errText = fmt.Sprintf("HTTP %d (Retry-After %s)", status, wait)
		}
	default:
		r.errText = fmt.Sprintf("HTTP %d", status)
	}
	return r
}

// parseRetryAfter reads a Retry-After value, delay-seconds or an HTTP-date (RFC 9110
// §10.2.3). A date in the past is a wait of 0; anything unparseable is ignored.
func parseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if seconds, err := strconv.ParseInt(value, 10, 64); err == nil {
		if seconds < 0 {
			return 0, false
		}
		// Anything past the cap is treated alike; clamping first avoids overflow.
		seconds = min(seconds, int64(2*maxRetryAfter/time.Second))
		return time.Duration(seconds) * time.Second, true
	}
	if at, err := http.ParseTime(value); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// describeRequestError says in a few words why no response arrived: the text stored with
// the attempt. It never repeats the URL (url.Error does), which is the customer's own but
// may carry tokens that do not belong in logs.
func describeRequestError(err error, timeout time.Duration) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	var blocked *BlockedAddressError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var netErr net.Error
	var text string
	switch {
	case errors.As(err, &blocked):
		text = blocked.Error()
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &netErr) && netErr.Timeout()):
		text = "timeout after " + timeout.String()
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			text = "host not found: " + dnsErr.Name
		} else {
			text = "DNS lookup failed for " + dnsErr.Name
		}
	case errors.Is(err, syscall.ECONNREFUSED):
		text = "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		text = "connection reset by the receiver"
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		text = "receiver unreachable"
	case errors.As(err, &certErr):
		text = "TLS certificate rejected: " + certErr.Err.Error()
	case errors.As(err, &recordErr):
		text = "TLS handshake failed: the receiver does not speak TLS"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		text = "connection closed before a response"
	default:
		text = "request failed: " + err.Error()
	}
	if len(text) > maxErrorText {
		text = strings.ToValidUTF8(text[:maxErrorText], "")
	}
	return text
}
