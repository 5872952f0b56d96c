package dashboard

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"riskapi/internal/store"
)

// pageNames are the templates in templates/, each rendered inside layout.html.
var pageNames = []string{
	"signin", "signup", "error", "settings",
	"keys", "key_new", "key_created", "key_revoke",
	"usage", "analyses", "agent",
	"webhooks", "webhook", "webhook_created", "webhook_delete",
}

var templateFuncs = template.FuncMap{
	"time":  formatTime,
	"timep": formatTimePtr,
	"join":  strings.Join,
	"int":   func(n int64) string { return formatInt(n) },
}

func parsePages() (map[string]*template.Template, error) {
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(templateFuncs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: parse template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// view is what every template gets: the page's own Data and what the layout shows.
type view struct {
	Title  string
	Nav    string // the active section: keys, usage, webhooks, analyses, settings
	Signed bool
	Email  string
	// Account is the signed-in account; Live is the mode being looked at.
	AccountID   string
	AccountName string
	Plan        string
	Live        bool
	CSRF        string
	SignUp      bool
	Path        string // the page's path, where the mode switch returns to
	Notice      string
	Error       string
	Data        any
}

// signedInView starts a view for a signed-in visitor.
func (v *visitor) view(title, nav string) view {
	return view{Title: title, Nav: nav, Signed: true, Email: v.user.Email, AccountID: v.account.ID,
		AccountName: v.account.Name, Plan: string(v.account.Plan), Live: v.mode == store.ModeLive, CSRF: v.csrf}
}

// render writes a page with status. Pages are rendered to memory first, so a template error
// becomes a clean 500 instead of half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, data view) {
	t, ok := h.pages[name]
	if !ok {
		panic("dashboard: no template " + name)
	}
	data.SignUp = h.cfg.SignUp
	data.Path = r.URL.Path
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", data); err != nil {
		h.cfg.Logger.Error("dashboard: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	// Pages show account data, and one of them a new key: never store them in any cache.
	hd.Set("Cache-Control", "no-store")
	hd.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// renderError shows a message on its own page, signed in or not.
func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, status int, message string) {
	h.render(w, r, status, "error", view{Title: http.StatusText(status), Data: message})
}

// notices are the messages a redirect can ask the next page to show (?done=…); only these
// fixed texts are shown, so no query string can put words on a page.
var notices = map[string]string{
	"revoked":          "The key was revoked. Requests with it are refused from now on.",
	"password":         "Your password was changed and your other sessions were signed out.",
	"signed-out-all":   "Every session was signed out, this one included.",
	"webhook-enabled":  "The webhook is enabled.",
	"webhook-disabled": "The webhook is disabled; events are held until it is enabled again.",
	"webhook-deleted":  "The webhook and its delivery log were deleted.",
	"test-sent":        "A webhook.test event is on its way; its delivery appears below.",
	"welcome":          "Your account is ready. Generate a test key to start.",
}

func noticeFor(r *http.Request) string { return notices[r.URL.Query().Get("done")] }

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func formatTimePtr(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return formatTime(*t)
}

// formatInt writes n with thousands separators: 1,000,000.
func formatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// sentence makes an error message a sentence for a page: capitalised, with a full stop.
func sentence(err error) string {
	s := err.Error()
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
