package ui_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockd/lockd/httpapi/wire"
	"github.com/lockd/lockd/internal/server"
	"github.com/lockd/lockd/internal/servertest"
)

// screenshot, when set, makes TestStatusPage_Screenshot write a PNG of the
// page over a small busy cluster there (scripts/ui-screenshot.sh).
var (
	screenshot      = flag.String("screenshot", "", "write a screenshot of the status page to this PNG file")
	screenshotWidth = flag.Int("screenshot-width", 1100, "the browser window's width for -screenshot, in CSS pixels (390 for a phone)")
)

// TestStatusPage_Browser opens the status page of a one-node cluster with
// ACLs on in headless Chromium. The page asks for a token; given one, it
// shows the leader, and follows a lock through acquire, a queued waiter,
// hand-off and release without being reloaded, along with the session
// count, an election and a shared lock. A reload of the tab keeps the
// token.
func TestStatusPage_Browser(t *testing.T) {
	const secret = "status-page-test-secret"
	chromium := mustChromium(t)
	c := servertest.NewWith(t, 1, func(i int, cfg *server.Config) {
		withMetrics(i, cfg)
		cfg.ACL = true
		cfg.Node.ACLBootstrapSecret = secret
	})
	servertest.WaitFor(t, 10*time.Second, "the bootstrap token", func() bool {
		_, ok := c.Nodes[0].Node().ResolveToken(secret)
		return ok
	})
	base := c.URL(0)
	ctx := mustBrowser(t, chromium, 1000, 900, 40*time.Second)

	step(t, ctx, "be asked for a token",
		chromedp.Navigate(base+"/ui"),
		chromedp.WaitVisible(`#token-form`, chromedp.ByQuery),
		waitText(`#alert`, "access: ACLs are on: send a token as \"Authorization: Bearer SECRET\""),
		chromedp.Evaluate(`window.notReloaded = true`, nil))
	step(t, ctx, "give the token and see the leader",
		chromedp.SendKeys(`#token`, secret, chromedp.ByQuery),
		chromedp.Click(`#token-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitNotVisible(`#token-form`, chromedp.ByQuery),
		chromedp.WaitVisible(`#members tr[data-member="n1"] .badge.lead`, chromedp.ByQuery),
		chromedp.WaitVisible(`#locks .empty`, chromedp.ByQuery),
		chromedp.WaitNotVisible(`#alert`, chromedp.ByQuery))
	mustText(t, ctx, `#c-state`, "Leader")
	mustText(t, ctx, `#c-leader`, "n1")
	var link string
	step(t, ctx, "read the member's link", chromedp.Evaluate(`document.querySelector('#members tr[data-member="n1"] a').getAttribute('href')`, &link))
	if link != base+"/ui/" {
		t.Fatalf("member n1 links to %q, want its status page %s/ui/", link, base)
	}
	api := apiClient{t: t, base: base, secret: secret}
	// The page waits for changes in blocking queries, one for each list,
	// rather than asking again and again.
	servertest.WaitFor(t, 10*time.Second, "the page's 3 blocking queries", func() bool {
		return api.metric("lockd_blocking_queries") >= 3
	})

	s1 := api.session("worker-1")
	s2 := api.session("worker-2")
	tok1 := api.acquire("jobs/nightly", s1, "exclusive")
	held := fmt.Sprintf(`tr[data-lock="jobs/nightly"][data-state="held"] .holder[data-session=%q][data-token="%d"]`, s1, tok1)
	step(t, ctx, "see the lock held by worker-1 with its token",
		chromedp.WaitVisible(held, chromedp.ByQuery))
	mustText(t, ctx, held, s1[:8]+" worker-1 · #"+fmt.Sprint(tok1))
	step(t, ctx, "see both sessions counted", waitText(`#c-sessions`, "2"))

	// worker-2 queues behind worker-1.
	granted := make(chan uint64, 1)
	go func() { granted <- api.waitAcquire(ctx, "jobs/nightly", s2, "20s") }()
	step(t, ctx, "see one waiter",
		chromedp.WaitVisible(`tr[data-lock="jobs/nightly"] .waiters[data-waiters="1"]`, chromedp.ByQuery))

	api.post("/v1/locks/jobs/nightly/release", `{"session":"`+s1+`"}`)
	var tok2 uint64
	select {
	case tok2 = <-granted:
	case <-time.After(15 * time.Second):
	}
	if tok2 == 0 {
		t.Fatal("worker-2 was not granted the lock after worker-1 released it")
	}
	step(t, ctx, "see the lock handed over to worker-2, nobody waiting",
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-lock="jobs/nightly"] .holder[data-session=%q][data-token="%d"]`, s2, tok2), chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-lock="jobs/nightly"] .waiters[data-waiters="0"]`, chromedp.ByQuery))

	api.post("/v1/locks/jobs/nightly/release", `{"session":"`+s2+`"}`)
	step(t, ctx, "see the lock free",
		chromedp.WaitVisible(`tr[data-lock="jobs/nightly"][data-state="free"] .badge.free`, chromedp.ByQuery))
	step(t, ctx, "see who held it last", waitContains(`tr[data-lock="jobs/nightly"]`, fmt.Sprintf("(was %s #%d)", s2[:8], tok2)))
	if n := count(t, ctx, `tr[data-lock="jobs/nightly"] .holder`); n != 0 {
		t.Fatalf("the free lock still shows %d holder(s)", n)
	}

	api.post("/v1/elections/scheduler/campaign", `{"session":"`+s2+`","value":"10.0.0.7:9000"}`)
	step(t, ctx, "see the election's leader",
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-election="scheduler"] .holder[data-session=%q]`, s2), chromedp.ByQuery))
	mustText(t, ctx, `tr[data-election="scheduler"] .value`, "10.0.0.7:9000")

	// A shared lock shows each holder with its own token.
	shared := []uint64{api.acquire("reports/cache", s1, "shared"), api.acquire("reports/cache", s2, "shared")}
	for i, s := range []string{s1, s2} {
		mustText(t, ctx, fmt.Sprintf(`tr[data-lock="reports/cache"] .holder[data-session=%q]`, s),
			fmt.Sprintf("%s worker-%d · #%d", s[:8], i+1, shared[i]))
	}

	var same bool
	step(t, ctx, "check the page was never reloaded", chromedp.Evaluate(`window.notReloaded === true`, &same))
	if !same {
		t.Fatal("the page was reloaded: it must follow changes through its blocking queries")
	}

	var asked bool
	var stored string
	step(t, ctx, "reload the tab and see the state without being asked again",
		chromedp.Reload(),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-election="scheduler"] .holder[data-session=%q]`, s2), chromedp.ByQuery),
		chromedp.Evaluate(`!document.querySelector('#token-form').hidden`, &asked),
		chromedp.Evaluate(`sessionStorage.getItem('lockd.token')`, &stored))
	if asked || stored != secret {
		t.Fatalf("after a reload of the tab: token form shown %v, token in sessionStorage %q: want the token kept for the tab", asked, stored)
	}

	// A list longer than a page shows its first page and a way on.
	var wg sync.WaitGroup
	errs := make(chan string, 50)
	for i := range 50 { // at once, so that the commits share fsyncs
		wg.Go(func() {
			path := fmt.Sprintf("/v1/locks/page/%02d/acquire", i)
			if status, out, err := api.do(context.Background(), http.MethodPost, path, `{"session":"`+s1+`"}`); status != http.StatusOK {
				errs <- fmt.Sprintf("POST %s: %d %s %v", path, status, out, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	step(t, ctx, "see the first page of locks, then the next",
		chromedp.WaitVisible(`tr[data-lock="page/49"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#locks [data-page=next]:not([disabled])`, chromedp.ByQuery),
		chromedp.Click(`#locks [data-page=next]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-lock="reports/cache"]`, chromedp.ByQuery))
	if n := count(t, ctx, `#locks tbody tr`); n != 1 {
		t.Fatalf("the second page of 51 locks shows %d rows, want 1", n)
	}
	step(t, ctx, "go back to the first page",
		chromedp.Click(`#locks [data-page=first]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-lock="page/00"]`, chromedp.ByQuery))
	if n := count(t, ctx, `#locks tbody tr[data-lock^="page/"]`); n != 50 {
		t.Fatalf("the first page shows %d of the page/ locks, want 50", n)
	}
}

// TestStatusPage_Screenshot writes the README's screenshot: a 3-node
// cluster with a few sessions, locks (held, shared, queued for) and an
// election. It runs only with -screenshot=FILE.
func TestStatusPage_Screenshot(t *testing.T) {
	if *screenshot == "" {
		t.Skip("writes a screenshot only with -screenshot=FILE (scripts/ui-screenshot.sh)")
	}
	chromium := mustChromium(t)
	c := servertest.NewWith(t, 3, withMetrics)
	leader := c.WaitLeader()
	api := apiClient{t: t, base: c.URL(leader)}
	sched, w1, w2, w3 := api.session("scheduler-a"), api.session("worker-1"), api.session("worker-2"), api.session("backup")
	api.acquire("jobs/nightly", w1, "exclusive")
	api.acquire("reports/cache", w1, "shared")
	api.acquire("reports/cache", w2, "shared")
	api.acquire("db/migrate", w3, "exclusive")
	api.post("/v1/elections/scheduler/campaign", `{"session":"`+sched+`","value":"10.0.0.7:9000"}`)

	ctx := mustBrowser(t, chromium, *screenshotWidth, 1000, 40*time.Second)
	go api.waitAcquire(ctx, "db/migrate", w2, "2m") // a waiter, for the picture
	var png []byte
	step(t, ctx, "render the page",
		chromedp.Navigate(c.URL(leader)+"/ui/"),
		chromedp.WaitVisible(`tr[data-election="scheduler"] .holder`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-lock="db/migrate"] .waiters[data-waiters="1"]`, chromedp.ByQuery),
		chromedp.Sleep(2500*time.Millisecond), // a cluster refresh after every session exists
		chromedp.FullScreenshot(&png, 100),
	)
	if err := os.WriteFile(*screenshot, png, 0o644); err != nil { //nolint:gosec // G306: a picture for the README, meant to be read by all
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", *screenshot, len(png))
}

// withMetrics gives each node a registry, so that /metrics exists and the
// page can count the sessions.
func withMetrics(_ int, cfg *server.Config) { cfg.Metrics = prometheus.NewRegistry() }

// mustChromium returns the path of a Chromium or Chrome binary, or skips
// the test saying how to install one.
func mustChromium(t *testing.T) string {
	t.Helper()
	if p := findChromium(); p != "" {
		return p
	}
	// Tests do not install packages: make test-deps (or .ci/run) does,
	// saying so.
	t.Skip("status page browser test skipped: no chromium on PATH; make test-deps installs it")
	return ""
}

func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// mustBrowser starts headless Chromium with a window of w x h and returns
// a context driving one tab of it, ended with the test or after limit.
// JavaScript exceptions and console errors in the page (a
// Content-Security-Policy violation among them) fail the test.
func mustBrowser(t *testing.T, chromium string, w, h int, limit time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.WindowSize(w, h),
		chromedp.Flag("disable-gpu", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run its sandbox as root
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx) // closes the browser and waits for it
		cancelTab()
		cancelAlloc()
		cancel()
	})
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			t.Errorf("page threw: %s", ev.ExceptionDetails.Error())
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == cdpruntime.APITypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value))
				}
				t.Errorf("page logged an error: %s", strings.Join(parts, " "))
			}
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", chromium, err)
	}
	return ctx
}

// step runs actions in the browser, failing the test with what it was
// waiting for when they fail or time out.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Run(sctx, actions...); err != nil {
		var page string
		_ = chromedp.Run(ctx, chromedp.Text("main", &page, chromedp.ByQuery))
		t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, page)
	}
	t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
}

// waitText waits until the element sel's text is want.
func waitText(sel, want string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`document.querySelector(%q)?.textContent.trim() === %q`, sel, want), nil,
		chromedp.WithPollingInterval(100*time.Millisecond))
}

// waitContains waits until the element sel's text contains want.
func waitContains(sel, want string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`!!document.querySelector(%q)?.textContent.includes(%q)`, sel, want), nil,
		chromedp.WithPollingInterval(100*time.Millisecond))
}

// mustText waits until the element sel's text, trimmed, is want.
func mustText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	step(t, ctx, fmt.Sprintf("see %q in %s", want, sel), waitText(sel, want))
}

func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	var n int
	step(t, ctx, "count "+sel, chromedp.Evaluate(fmt.Sprintf(`document.querySelectorAll(%q).length`, sel), &n))
	return n
}

// apiClient makes the JSON API calls the tests change the cluster with.
type apiClient struct {
	t      *testing.T
	base   string
	secret string // the ACL token's secret, if any
}

// do sends one request, bounded by ctx and 30 s, with the token if any.
func (a apiClient) do(ctx context.Context, method, path, body string) (status int, out []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if a.secret != "" {
		req.Header.Set("Authorization", "Bearer "+a.secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err = io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// post sends a POST that must succeed and returns the answer's body.
func (a apiClient) post(path, body string) []byte {
	a.t.Helper()
	status, out, err := a.do(context.Background(), http.MethodPost, path, body)
	if err != nil || status/100 != 2 {
		a.t.Fatalf("POST %s %s: %d %s %v", path, body, status, out, err)
	}
	return out
}

func (a apiClient) session(name string) string {
	a.t.Helper()
	var s wire.Session
	if err := json.Unmarshal(a.post("/v1/sessions", `{"name":"`+name+`","ttl":"60s"}`), &s); err != nil || s.ID == "" {
		a.t.Fatalf("create session %s: %v", name, err)
	}
	return s.ID
}

// acquire takes lock name for session, trying once, and returns the token.
func (a apiClient) acquire(name, session, mode string) uint64 {
	a.t.Helper()
	var r wire.AcquireResponse
	out := a.post("/v1/locks/"+name+"/acquire", `{"session":"`+session+`","mode":"`+mode+`"}`)
	if err := json.Unmarshal(out, &r); err != nil || r.Token == 0 {
		a.t.Fatalf("acquire %s: %s %v", name, out, err)
	}
	return r.Token
}

// waitAcquire is a blocking acquire that may outlive the test's checks, so
// it fails nothing: it ends with ctx and returns the token, or 0.
func (a apiClient) waitAcquire(ctx context.Context, name, session, wait string) uint64 {
	status, out, err := a.do(ctx, http.MethodPost, "/v1/locks/"+name+"/acquire", `{"session":"`+session+`","wait":"`+wait+`"}`)
	var r wire.AcquireResponse
	if err != nil || status != http.StatusOK || json.Unmarshal(out, &r) != nil {
		return 0
	}
	return r.Token
}

// metric returns the value of the unlabelled metric name from /metrics,
// or -1 when it is absent.
func (a apiClient) metric(name string) float64 {
	a.t.Helper()
	status, out, err := a.do(context.Background(), http.MethodGet, "/metrics", "")
	if err != nil || status != http.StatusOK {
		a.t.Fatalf("GET /metrics: %d %v", status, err)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}
