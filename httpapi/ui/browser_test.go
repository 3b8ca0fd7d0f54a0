package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
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
var screenshot = flag.String("screenshot", "", "write a screenshot of the status page to this PNG file")

// TestStatusPage_Browser opens the status page of a one-node cluster in
// headless Chromium and checks that it follows a lock through acquire,
// a queued waiter, hand-off and release without being reloaded, along with
// the members, the session count and an election.
func TestStatusPage_Browser(t *testing.T) {
	chromium := mustChromium(t)
	c := servertest.NewWith(t, 1, withMetrics)
	base := c.URL(0)
	ctx := mustBrowser(t, chromium, 1000, 900, 40*time.Second)

	step(t, ctx, "open the page and see the leader",
		chromedp.Navigate(base+"/ui"),
		chromedp.WaitVisible(`#members tr[data-member="n1"] .badge.lead`, chromedp.ByQuery),
		chromedp.Evaluate(`window.notReloaded = true`, nil),
	)
	mustText(t, ctx, `#c-state`, "Leader")
	mustText(t, ctx, `#c-leader`, "n1")
	api := apiClient{t: t, base: base}
	// The page waits for changes in blocking queries, one for each list,
	// rather than asking again and again.
	servertest.WaitFor(t, 10*time.Second, "the page's 3 blocking queries", func() bool {
		return api.metric("lockd_blocking_queries") >= 3
	})

	s1 := api.session("worker-1")
	s2 := api.session("worker-2")
	tok1 := api.acquire("jobs/nightly", s1, "")
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
	if n := count(t, ctx, `tr[data-lock="jobs/nightly"] .holder`); n != 0 {
		t.Fatalf("the free lock still shows %d holder(s)", n)
	}

	api.post("/v1/elections/scheduler/campaign", `{"session":"`+s2+`","value":"10.0.0.7:9000"}`)
	step(t, ctx, "see the election's leader",
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-election="scheduler"] .holder[data-session=%q]`, s2), chromedp.ByQuery))
	mustText(t, ctx, `tr[data-election="scheduler"] .value`, "10.0.0.7:9000")

	var same bool
	step(t, ctx, "check the page was never reloaded", chromedp.Evaluate(`window.notReloaded === true`, &same))
	if !same {
		t.Fatal("the page was reloaded: it must follow changes through its blocking queries")
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
	api.acquire("jobs/nightly", w1, "")
	api.post("/v1/locks/reports/cache/acquire", `{"session":"`+w1+`","mode":"shared"}`)
	api.post("/v1/locks/reports/cache/acquire", `{"session":"`+w2+`","mode":"shared"}`)
	api.acquire("db/migrate", w3, "")
	api.post("/v1/elections/scheduler/campaign", `{"session":"`+sched+`","value":"10.0.0.7:9000"}`)

	ctx := mustBrowser(t, chromium, 1100, 1000, 40*time.Second)
	go api.waitAcquire(ctx, "db/migrate", w2, "2m") // a waiter, for the picture
	var png []byte
	step(t, ctx, "render the page",
		chromedp.Navigate(c.URL(leader)+"/ui/"),
		chromedp.WaitVisible(`tr[data-election="scheduler"] .holder`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-lock="db/migrate"] .waiters[data-waiters="1"]`, chromedp.ByQuery),
		chromedp.Sleep(2500*time.Millisecond), // a cluster refresh after every session exists
		chromedp.FullScreenshot(&png, 100),
	)
	if err := os.WriteFile(*screenshot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", *screenshot, len(png))
}

// withMetrics gives each node a registry, so that /metrics exists and the
// page can count the sessions.
func withMetrics(_ int, cfg *server.Config) { cfg.Metrics = prometheus.NewRegistry() }

var (
	installOnce sync.Once
	installMsg  string
)

// mustChromium returns the path of a Chromium or Chrome binary. When there
// is none it installs Debian's chromium package where it can (root with
// apt-get on Linux), and otherwise skips the test saying why.
func mustChromium(t *testing.T) string {
	t.Helper()
	if p := findChromium(); p != "" {
		return p
	}
	installOnce.Do(func() { installMsg = installChromium(t) })
	if p := findChromium(); p != "" {
		return p
	}
	t.Skipf("status page browser test skipped: no chromium on PATH, %s; install it with: apt-get install chromium", installMsg)
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

// installChromium runs apt-get install chromium, bounded in time, and
// returns what stopped it when it could not.
func installChromium(t *testing.T) string {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return "and installing it needs root on Debian or Ubuntu"
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "and there is no apt-get to install it with"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute)
	defer cancel()
	t.Log("installing chromium with apt-get (once per machine; a few minutes)")
	for _, args := range [][]string{
		{"-o", "DPkg::Lock::Timeout=120", "update", "-qq"},
		{"-o", "DPkg::Lock::Timeout=120", "install", "-y", "-qq", "--no-install-recommends", "chromium"},
	} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			tail := string(out)
			if len(tail) > 400 {
				tail = tail[len(tail)-400:]
			}
			return fmt.Sprintf("and apt-get %s failed: %v: %s", strings.Join(args[2:], " "), err, tail)
		}
	}
	return "though apt-get installed chromium"
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
	t    *testing.T
	base string
}

func (a apiClient) post(path, body string) []byte {
	a.t.Helper()
	hc := http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Post(a.base+path, "application/json", bytes.NewBufferString(body))
	if err != nil {
		a.t.Errorf("POST %s: %v", path, err)
		return nil
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		a.t.Errorf("POST %s: %d %s", path, resp.StatusCode, out)
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

// acquire takes lock name for session, waiting up to wait ("" = try once),
// and returns the token (0 after an error, which fails the test).
func (a apiClient) acquire(name, session, wait string) uint64 {
	body := `{"session":"` + session + `"}`
	if wait != "" {
		body = `{"session":"` + session + `","wait":"` + wait + `"}`
	}
	var r wire.AcquireResponse
	if out := a.post("/v1/locks/"+name+"/acquire", body); out != nil {
		_ = json.Unmarshal(out, &r)
	}
	return r.Token
}

// metric returns the value of the unlabelled metric name from /metrics,
// or -1 when it is absent.
func (a apiClient) metric(name string) float64 {
	a.t.Helper()
	resp, err := http.Get(a.base + "/metrics")
	if err != nil {
		a.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// waitAcquire is a blocking acquire that may outlive the test's checks: it
// ends with ctx and reports nothing, returning the token or 0.
func (a apiClient) waitAcquire(ctx context.Context, name, session, wait string) uint64 {
	body := `{"session":"` + session + `","wait":"` + wait + `"}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/v1/locks/"+name+"/acquire", strings.NewReader(body))
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var r wire.AcquireResponse
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&r) != nil {
		return 0
	}
	return r.Token
}
