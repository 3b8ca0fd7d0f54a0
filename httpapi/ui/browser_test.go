package ui_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/server"
	"github.com/lockd/lockd/test/servertest"
)

// screenshot, when set, makes TestStatusPage_Screenshot write a PNG of the
// page over a small busy cluster there (scripts/ui-screenshot.sh).
var (
	screenshot      = flag.String("screenshot", "", "write a screenshot of the status page to this PNG file")
	screenshotWidth = flag.Int("screenshot-width", 1100, "the browser window's width for -screenshot, in CSS pixels (390 for a phone)")
)

// TestStatusPage_Browser opens the status page of a one-node cluster with
// ACLs on in headless Chromium. The page asks for a token; given one, it
// shows the leader, and follows a lock through acquire (with its holder's
// grant time), a queued waiter, hand-off and release without being
// reloaded, along with the session count, an election and a shared lock. A
// reload of the tab keeps the token. Then the operator's parts: links to a
// lock, a session and an election that open them (on another page of the
// list too), queues with each waiter's position and mode, a lock-delay's
// end, the filter by name prefix, destroying a session (refused, then
// done), words never broken inside, and the phone layout.
func TestStatusPage_Browser(t *testing.T) {
	const secret = "status-page-test-secret"
	chromium := mustChromium(t)
	base := aclNode(t, secret)
	ctx := mustBrowser(t, chromium, 1000, 900, 3*time.Minute)

	step(t, ctx, "be asked for a token",
		chromedp.Navigate(base+"/ui"),
		chromedp.WaitVisible(`#token-form`, chromedp.ByQuery),
		waitText(`#alert`, "access: ACLs are on: send a token as \"Authorization: Bearer SECRET\""),
		chromedp.Evaluate(`window.notReloaded = true`, nil))
	step(t, ctx, "give the token and see the leader",
		chromedp.SendKeys(`#token`, secret, chromedp.ByQuery),
		click(`#token-form button[type=submit]`),
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
	ac := apiClient{t: t, base: base, secret: secret}
	// The page waits for changes in blocking queries, one for each list,
	// rather than asking again and again.
	servertest.WaitFor(t, 10*time.Second, "the page's 3 blocking queries", func() bool {
		return ac.metric("lockd_blocking_queries") >= 3
	})

	s1 := ac.session("worker-1")
	s2 := ac.session("worker-2")
	tok1 := ac.acquire("jobs/nightly", s1, "exclusive")
	held := fmt.Sprintf(`tr[data-lock="jobs/nightly"][data-state="held"] .holder[data-session=%q][data-token="%d"]`, s1, tok1)
	step(t, ctx, "see the lock held by worker-1 with its token",
		chromedp.WaitVisible(held, chromedp.ByQuery))
	mustText(t, ctx, held+" .who", s1[:8]+" worker-1")
	mustText(t, ctx, held+" .token", "#"+fmt.Sprint(tok1))
	// Held for: counted from the grant time the API gives.
	var lock api.Lock
	ac.get("/v1/locks/jobs/nightly", &lock)
	mustAttr(t, ctx, held+" .held", "data-since", fmt.Sprint(lock.Holders[0].AcquiredAt.UnixMilli()))
	step(t, ctx, "see both sessions counted", waitText(`#c-sessions`, "2"))

	// worker-2 queues behind worker-1.
	granted := make(chan uint64, 1)
	go func() { granted <- ac.waitAcquire(ctx, "jobs/nightly", s2, "20s") }()
	step(t, ctx, "see one waiter, worker-2, first in the queue",
		chromedp.WaitVisible(`tr[data-lock="jobs/nightly"] .waiters[data-waiters="1"]`, chromedp.ByQuery),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-lock="jobs/nightly"] .waiter[data-pos="1"][data-session=%q][data-mode="exclusive"]`, s2), chromedp.ByQuery))

	ac.post("/v1/locks/jobs/nightly/release", `{"session":"`+s1+`"}`)
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

	ac.post("/v1/locks/jobs/nightly/release", `{"session":"`+s2+`"}`)
	step(t, ctx, "see the lock free",
		chromedp.WaitVisible(`tr[data-lock="jobs/nightly"][data-state="free"] .badge.free`, chromedp.ByQuery))
	step(t, ctx, "see who held it last", waitContains(`tr[data-lock="jobs/nightly"]`, fmt.Sprintf("(was %s #%d)", s2[:8], tok2)))
	if n := count(t, ctx, `tr[data-lock="jobs/nightly"] .holder`); n != 0 {
		t.Fatalf("the free lock still shows %d holder(s)", n)
	}

	ac.post("/v1/elections/scheduler/campaign", `{"session":"`+s2+`","value":"10.0.0.7:9000"}`)
	step(t, ctx, "see the election's leader",
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-election="scheduler"] .holder[data-session=%q]`, s2), chromedp.ByQuery))
	mustText(t, ctx, `tr[data-election="scheduler"] .value`, "10.0.0.7:9000")
	var election api.Election
	ac.get("/v1/elections/scheduler", &election)
	mustAttr(t, ctx, `tr[data-election="scheduler"] .holder .held`, "data-since", fmt.Sprint(election.AcquiredAt.UnixMilli()))

	// A shared lock shows each holder with its own token.
	shared := []uint64{ac.acquire("reports/cache", s1, "shared"), ac.acquire("reports/cache", s2, "shared")}
	for i, s := range []string{s1, s2} {
		sel := fmt.Sprintf(`tr[data-lock="reports/cache"] .holder[data-session=%q]`, s)
		mustText(t, ctx, sel+" .who", fmt.Sprintf("%s worker-%d", s[:8], i+1))
		mustText(t, ctx, sel+" .token", fmt.Sprintf("#%d", shared[i]))
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
			if status, out, err := ac.do(context.Background(), http.MethodPost, path, `{"session":"`+s1+`"}`); status != http.StatusOK {
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
		click(`#locks [data-page=next]`),
		chromedp.WaitVisible(`tr[data-lock="reports/cache"]`, chromedp.ByQuery))
	if n := count(t, ctx, `#locks tbody tr`); n != 1 {
		t.Fatalf("the second page of 51 locks shows %d rows, want 1", n)
	}
	step(t, ctx, "go back to the first page",
		click(`#locks [data-page=first]`),
		chromedp.WaitVisible(`tr[data-lock="page/00"]`, chromedp.ByQuery))
	if n := count(t, ctx, `#locks tbody tr[data-lock^="page/"]`); n != 50 {
		t.Fatalf("the first page shows %d of the page/ locks, want 50", n)
	}

	// Links: a lock on the second page of the list, opened by its link.
	step(t, ctx, "follow a link to a lock on the list's second page",
		goTo("#lock/reports/cache"),
		chromedp.WaitVisible(`#locks tr.target[data-lock="reports/cache"]`, chromedp.ByQuery))
	if n := count(t, ctx, `#locks tr.target`); n != 1 {
		t.Fatalf("%d rows marked as the link's target, want 1", n)
	}
	// A holder links to its session, which opens with its whole id.
	step(t, ctx, "follow the holder's link to its session",
		click(fmt.Sprintf(`tr[data-lock="reports/cache"] .holder[data-session=%q] a.who`, s2)),
		chromedp.WaitVisible(fmt.Sprintf(`#sessions tr.target[data-session=%q]`, s2), chromedp.ByQuery))
	mustText(t, ctx, fmt.Sprintf(`#sessions tr.target[data-session=%q] code.id`, s2), s2)
	// The leader reports each session's time left (ttl_remaining) and
	// last renewal (renewed_at); the page shows both.
	step(t, ctx, "see the session's time left and last renewal",
		waitContains(fmt.Sprintf(`#sessions tr.target[data-session=%q] td[data-label="Time left"]`, s2), " left"),
		waitContains(fmt.Sprintf(`#sessions tr.target[data-session=%q] td[data-label="Time left"]`, s2), "renewed "))
	// A fresh load of a link to an election opens it too.
	step(t, ctx, "load the page from a link to an election",
		chromedp.Navigate("about:blank"),
		chromedp.Navigate(base+"/ui/#election/scheduler"),
		chromedp.WaitVisible(`#elections tr.target[data-election="scheduler"]`, chromedp.ByQuery))
	step(t, ctx, "follow a link to a lock that does not exist",
		goTo("#lock/no/such/lock"),
		waitContains(`#locks .empty`, "The lock no/such/lock is not in the list"))

	// Queues: each waiter with its position, session and mode, for a lock
	// (on the list's second page: opened by its link) and an election.
	s3 := ac.session("worker-3")
	ac.acquire("queue/demo", s1, "exclusive")
	go ac.waitAcquireMode(ctx, "queue/demo", s2, "exclusive", "2m")
	step(t, ctx, "see worker-2 queue first",
		goTo("#lock/queue/demo"),
		chromedp.WaitVisible(fmt.Sprintf(`tr.target[data-lock="queue/demo"] .waiter[data-pos="1"][data-session=%q][data-mode="exclusive"]`, s2), chromedp.ByQuery))
	go ac.waitAcquireMode(ctx, "queue/demo", s3, "shared", "2m")
	second := fmt.Sprintf(`tr[data-lock="queue/demo"] .waiter[data-pos="2"][data-session=%q][data-mode="shared"]`, s3)
	step(t, ctx, "see worker-3 queue second, shared",
		chromedp.WaitVisible(second, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-lock="queue/demo"] .waiters[data-waiters="2"]`, chromedp.ByQuery))
	step(t, ctx, "read the second waiter", waitContains(second, "2. "+s3[:8]+" worker-3 shared"))
	go ac.waitCampaign(ctx, "scheduler", s1, "2m")
	step(t, ctx, "see worker-1 queue for the election",
		goTo("#election/scheduler"),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-election="scheduler"] .waiter[data-pos="1"][data-session=%q]`, s1), chromedp.ByQuery))

	// A lock-delay: the session of its holder expires; the page shows
	// when the delay ends, as the API says.
	short := ac.sessionWith("short-lived", "1s", "60s")
	ac.acquire("jobs/delayed", short, "exclusive")
	step(t, ctx, "see the lock whose holder will expire",
		goTo("#lock/jobs/delayed"),
		chromedp.WaitVisible(`tr.target[data-lock="jobs/delayed"]`, chromedp.ByQuery))
	servertest.WaitFor(t, 15*time.Second, "the session holding jobs/delayed to expire", func() bool {
		ac.get("/v1/locks/jobs/delayed", &lock)
		return len(lock.Holders) == 0
	})
	if lock.DelayUntil == nil {
		t.Fatalf("jobs/delayed after its holder expired: %+v, want a lock-delay", lock)
	}
	step(t, ctx, "see the lock-delay", chromedp.WaitVisible(`tr[data-lock="jobs/delayed"][data-state="free"] .delay [data-until]`, chromedp.ByQuery))
	mustAttr(t, ctx, `tr[data-lock="jobs/delayed"] .delay [data-until]`, "data-until", fmt.Sprint(lock.DelayUntil.UnixMilli()))

	// The filter: names that start with the prefix; sessions by id, name
	// or what they hold. It is kept in the address.
	step(t, ctx, "filter by queue/",
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(`tr[data-lock="jobs/delayed"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#filter`, "queue/", chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-lock="queue/demo"]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`tr[data-lock="jobs/delayed"]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`tr[data-election]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(fmt.Sprintf(`tr[data-session=%q]`, s2), chromedp.ByQuery),
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-session=%q]`, s1), chromedp.ByQuery))
	if n := count(t, ctx, `#locks tbody tr`); n != 1 {
		t.Fatalf("the filter queue/ shows %d locks, want 1", n)
	}
	var url string
	step(t, ctx, "read the address", chromedp.Location(&url))
	if !strings.HasSuffix(url, "/ui/?prefix=queue%2F") {
		t.Fatalf("with the filter on, the address is %s, want it to keep the prefix", url)
	}
	step(t, ctx, "reload: the filter stays",
		chromedp.Reload(),
		chromedp.WaitVisible(`tr[data-lock="queue/demo"]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`tr[data-lock="jobs/delayed"]`, chromedp.ByQuery),
		waitValue(`#filter`, "queue/"))
	step(t, ctx, "clear the filter",
		chromedp.Evaluate(`(() => { const f = document.querySelector('#filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()`, nil),
		chromedp.WaitVisible(`tr[data-lock="jobs/delayed"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-election="scheduler"]`, chromedp.ByQuery))

	// Destroying a session: the page asks first; a refusal is shown (here
	// the session is gone before the page's request), then one is done.
	gone, doomed := ac.session("gone-first"), ac.session("doomed")
	step(t, ctx, "ask to destroy a session",
		chromedp.WaitVisible(fmt.Sprintf(`tr[data-session=%q] button.destroy`, gone), chromedp.ByQuery),
		click(fmt.Sprintf(`tr[data-session=%q] button.destroy`, gone)),
		chromedp.WaitVisible(`#destroy-dialog`, chromedp.ByQuery),
		waitText(`#destroy-id`, gone))
	if status, out, err := ac.do(context.Background(), http.MethodDelete, "/v1/sessions/"+gone, ""); status != http.StatusOK {
		t.Fatalf("DELETE /v1/sessions/%s: %d %s %v", gone, status, out, err)
	}
	step(t, ctx, "confirm, and see the node's refusal",
		click(`#destroy-confirm`),
		chromedp.WaitVisible(`#destroy-error`, chromedp.ByQuery),
		waitContains(`#destroy-error`, "(session_expired)"),
		click(`#destroy-cancel`),
		chromedp.WaitNotVisible(`#destroy-dialog`, chromedp.ByQuery))
	step(t, ctx, "destroy a session",
		click(fmt.Sprintf(`tr[data-session=%q] button.destroy`, doomed)),
		chromedp.WaitVisible(`#destroy-dialog`, chromedp.ByQuery),
		waitText(`#destroy-name`, "(doomed)"),
		click(`#destroy-confirm`),
		chromedp.WaitNotVisible(`#destroy-dialog`, chromedp.ByQuery),
		waitContains(`#notice`, "destroyed"),
		chromedp.WaitNotPresent(fmt.Sprintf(`tr[data-session=%q]`, doomed), chromedp.ByQuery))
	if status, out, _ := ac.do(context.Background(), http.MethodGet, "/v1/sessions/"+doomed, ""); status != http.StatusGone {
		t.Fatalf("GET the destroyed session: %d %s, want 410", status, out)
	}

	// Words wrap whole, names after a '/', short session ids never; only
	// what has no words (addresses, whole ids, values) breaks anywhere.
	var wraps []string
	step(t, ctx, "read how cells wrap", chromedp.Evaluate(`[
		getComputedStyle(document.querySelector('#sessions td[data-label="Name"]')).overflowWrap,
		getComputedStyle(document.querySelector('#locks td a.name')).overflowWrap,
		String(document.querySelectorAll('#locks tr[data-lock="jobs/delayed"] a.name wbr').length),
		getComputedStyle(document.querySelector('#sessions td code.id.short')).whiteSpace,
		getComputedStyle(document.querySelector('#members td .id')).overflowWrap]`, &wraps))
	if want := "break-word break-word 1 nowrap anywhere"; strings.Join(wraps, " ") != want {
		t.Fatalf("wrapping of a session name, a lock name, its break points, a short session id, a peer address: %q, want %s", wraps, want)
	}

	// On a phone the tables are cards and nothing is wider than the screen.
	var fits, cards bool
	step(t, ctx, "narrow the window to a phone's",
		chromedp.EmulateViewport(390, 800),
		goTo("#lock/queue/demo"),
		chromedp.WaitVisible(`tr.target[data-lock="queue/demo"] .waiter[data-pos="2"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.documentElement.scrollWidth <= window.innerWidth`, &fits),
		chromedp.Evaluate(`getComputedStyle(document.querySelector('#locks thead')).display === 'none'`, &cards))
	if !fits || !cards {
		t.Fatalf("at 390 px: fits the width %v, tables as cards %v; want both", fits, cards)
	}
}

// TestStatusPage_Keys opens the keys view of a one-node cluster with
// ACLs on through a link to a prefix (#keys?prefix=config/): each key with
// its value (text as text, a value that looks like HTML as text too,
// other bytes as their size and a hex preview), indexes, version and
// flags; the prefix typed, kept in the address; an ephemeral key linked to
// the session that owns it; and a prefix with more keys than a page, read
// on with More.
func TestStatusPage_Keys(t *testing.T) {
	const secret = "status-page-keys-secret"
	chromium := mustChromium(t)
	base := aclNode(t, secret)
	ac := apiClient{t: t, base: base, secret: secret}
	b64 := base64.StdEncoding.EncodeToString
	ac.put("/v1/kv/config/db", `{"value":"`+b64([]byte("host=db0"))+`"}`)
	ac.put("/v1/kv/config/db", `{"value":"`+b64([]byte("host=db1"))+`","flags":7}`)
	ac.put("/v1/kv/config/html", `{"value":"`+b64([]byte("<b>x</b>"))+`"}`)
	ac.put("/v1/kv/config/bin", `{"value":"`+b64([]byte{0x00, 0xff, 0x10, 0x80, 0xc3})+`"}`)
	ac.put("/v1/kv/other/x", `{"value":"`+b64([]byte("y"))+`"}`)
	s1 := ac.session("worker-1")
	ac.put("/v1/kv/svc/leader", `{"value":"`+b64([]byte("n1"))+`","session":"`+s1+`","ephemeral":true}`)
	var wg sync.WaitGroup
	for i := range 55 { // more than a page, at once so that the commits share fsyncs
		wg.Go(func() { ac.put(fmt.Sprintf("/v1/kv/page/%02d", i), "") })
	}
	wg.Wait()
	var db struct {
		KV api.KV `json:"kv"`
	}
	ac.get("/v1/kv/config/db", &db)

	ctx := mustBrowser(t, chromium, 1000, 900, 2*time.Minute)
	step(t, ctx, "open a link to the keys under config/ and give the token",
		chromedp.Navigate(base+"/ui/#keys?prefix=config/"),
		chromedp.WaitVisible(`#token-form`, chromedp.ByQuery),
		chromedp.SendKeys(`#token`, secret, chromedp.ByQuery),
		click(`#token-form button[type=submit]`),
		chromedp.WaitVisible(`#keys tr[data-key="config/db"]`, chromedp.ByQuery),
		waitValue(`#keys-prefix`, "config/"))
	if n := count(t, ctx, `#keys tbody tr`); n != 3 {
		t.Fatalf("the keys under config/ show %d rows, want 3", n)
	}
	row := `#keys tr[data-key="config/db"]`
	mustText(t, ctx, row+` .kvalue[data-kind="text"]`, "host=db1")
	mustText(t, ctx, row+` .create`, fmt.Sprint(db.KV.CreateIndex))
	mustText(t, ctx, row+` .modify`, fmt.Sprint(db.KV.ModifyIndex))
	mustText(t, ctx, row+` .version`, "2")
	mustText(t, ctx, row+` .flags`, "7")
	mustText(t, ctx, row+` td[data-label="Session"]`, "–")
	// A value that looks like HTML is text, not markup.
	mustText(t, ctx, `#keys tr[data-key="config/html"] .kvalue[data-kind="text"]`, "<b>x</b>")
	if n := count(t, ctx, `#keys tr[data-key="config/html"] b`); n != 0 {
		t.Fatalf("the value <b>x</b> made %d <b> elements, want it shown as text", n)
	}
	bin := `#keys tr[data-key="config/bin"] .kvalue[data-kind="bytes"][data-size="5"]`
	mustText(t, ctx, bin+` .hex`, "00 ff 10 80 c3")
	step(t, ctx, "see the binary value's size", waitContains(bin, "5\u00a0bytes"))

	step(t, ctx, "type the prefix svc/",
		chromedp.Evaluate(`(() => { const f = document.querySelector('#keys-prefix'); f.value = 'svc/'; f.dispatchEvent(new Event('input')); })()`, nil),
		chromedp.WaitVisible(`#keys tr[data-key="svc/leader"]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`#keys tr[data-key="config/db"]`, chromedp.ByQuery))
	var url string
	step(t, ctx, "read the address", chromedp.Location(&url))
	if !strings.HasSuffix(url, "/ui/#keys?prefix=svc/") {
		t.Fatalf("with the prefix svc/ typed, the address is %s, want it to keep the prefix", url)
	}
	owner := fmt.Sprintf(`#keys tr[data-key="svc/leader"] a.who[data-session=%q]`, s1)
	mustText(t, ctx, owner, s1[:8]+" worker-1")
	step(t, ctx, "follow the ephemeral key's link to its session",
		click(owner),
		chromedp.WaitVisible(fmt.Sprintf(`#sessions tr.target[data-session=%q]`, s1), chromedp.ByQuery))

	step(t, ctx, "load the first page of the keys under page/",
		goTo("#keys?prefix=page/"),
		chromedp.WaitVisible(`#keys tr[data-key="page/49"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#keys-more`, chromedp.ByQuery),
		waitValue(`#keys-prefix`, "page/"))
	if n := count(t, ctx, `#keys tbody tr`); n != 50 {
		t.Fatalf("the first page of 55 keys shows %d rows, want 50", n)
	}
	mustText(t, ctx, `#keys tr[data-key="page/00"] .kvalue[data-kind="empty"]`, "empty")
	step(t, ctx, "read on with More",
		click(`#keys-more`),
		chromedp.WaitVisible(`#keys tr[data-key="page/54"]`, chromedp.ByQuery),
		chromedp.WaitNotVisible(`#keys-more`, chromedp.ByQuery))
	if n := count(t, ctx, `#keys tbody tr`); n != 55 {
		t.Fatalf("after More, the keys under page/ show %d rows, want 55", n)
	}
}

// TestStatusPage_MemberHealth opens the status page of a 3-node cluster:
// on the leader's page each member shows its last contact and its applied
// index with the lag behind the leader's, and the node its version; a
// follower's page says that only the leader knows them, and links to a
// member's page for them. Should leadership move meanwhile (a loaded
// machine), it looks again at the new leader's.
func TestStatusPage_MemberHealth(t *testing.T) {
	chromium := mustChromium(t)
	c := servertest.NewWith(t, 3, func(i int, cfg *server.Config) {
		withMetrics(i, cfg)
		cfg.Version = "v9.9.9-test"
	})
	leader := c.WaitLeader()
	apiClient{t: t, base: c.URL(leader)}.session("worker-1")
	ctx := mustBrowser(t, chromium, 1000, 900, 2*time.Minute)
	// healthy: this node leads, and every member's row has its contact and
	// its applied index with the lag.
	const healthy = `(() => {
		if (document.querySelector('#c-state').textContent !== 'Leader') return false;
		const rows = [...document.querySelectorAll('#members tbody tr')];
		return rows.length === 3 && rows.every((r) => r.hasAttribute('data-lag') &&
			/^[0-9]+ \((up to date|−[0-9]+)\)$/.test(r.querySelector('.applied').textContent.trim()) &&
			(r.classList.contains('leader') ? r.querySelector('.contact').textContent === 'this node'
				: r.querySelector('.contact').textContent.endsWith(' ago')));
	})()`
	var err error
	for try := 0; try < 3; try++ {
		leader = c.WaitLeader()
		if err = tryStep(ctx, 15*time.Second, chromedp.Navigate(c.URL(leader)+"/ui/"), poll(healthy)); err == nil {
			break
		}
		t.Logf("the leader's page (node %d) did not show every member's health: %v; looking at the leader again", leader, err)
	}
	if err != nil {
		t.Fatalf("no leader's page showed every member's health: %v", err)
	}
	mustText(t, ctx, `#c-version`, "v9.9.9-test")

	follower := c.Follower(leader)
	step(t, ctx, "open a follower's page",
		chromedp.Navigate(c.URL(follower)+"/ui/"),
		chromedp.WaitVisible(`#health-note a`, chromedp.ByQuery),
		waitContains(`#health-note`, "known to the leader only"))
	var href string
	step(t, ctx, "read the link to the leader's page", chromedp.AttributeValue(`#health-note a`, "href", &href, nil, chromedp.ByQuery))
	if href == c.URL(follower)+"/ui/" || !slices.Contains(c.URLs(), strings.TrimSuffix(href, "/ui/")) {
		t.Fatalf("the follower's page links to %q for member health, want another member's page", href)
	}
	if n := count(t, ctx, `#members tr[data-lag]`); n != 0 {
		t.Fatalf("a follower's page shows the lag of %d members, want none", n)
	}
}

// TestStatusPage_Screenshot writes the status page's screenshot in docs/operations.md: a 3-node
// cluster with a few sessions, locks (held, shared, queued for), an
// election and a few keys. It runs only with -screenshot=FILE.
func TestStatusPage_Screenshot(t *testing.T) {
	if *screenshot == "" {
		t.Skip("writes a screenshot only with -screenshot=FILE (scripts/ui-screenshot.sh)")
	}
	chromium := mustChromium(t)
	c := servertest.NewWith(t, 3, func(i int, cfg *server.Config) {
		withMetrics(i, cfg)
		cfg.Version = "dev" // what a build without -ldflags says
	})
	leader := c.WaitLeader()
	ac := apiClient{t: t, base: c.URL(leader)}
	sched, w1, w2, w3 := ac.session("scheduler-a"), ac.session("worker-1"), ac.session("worker-2"), ac.session("backup")
	ac.acquire("jobs/nightly", w1, "exclusive")
	ac.acquire("reports/cache", w1, "shared")
	ac.acquire("reports/cache", w2, "shared")
	ac.acquire("db/migrate", w3, "exclusive")
	ac.post("/v1/elections/scheduler/campaign", `{"session":"`+sched+`","value":"10.0.0.7:9000"}`)
	// A few keys: text, bytes, and one owned by a session.
	b64 := base64.StdEncoding.EncodeToString
	ac.put("/v1/kv/config/db", `{"value":"`+b64([]byte("host=db1 port=5432"))+`","flags":1}`)
	ac.put("/v1/kv/config/tls-key", `{"value":"`+b64([]byte{0x30, 0x82, 0x04, 0xa4, 0x02, 0x01, 0x00, 0x02, 0x82, 0x01, 0x01, 0x00, 0xc1, 0x9e, 0x5b, 0x07, 0x3d})+`"}`)
	ac.put("/v1/kv/scheduler/leader", `{"value":"`+b64([]byte("10.0.0.7:9000"))+`","session":"`+sched+`","ephemeral":true}`)

	// A lock in its lock-delay: its holder's session expires.
	gone := ac.sessionWith("cron-7", "1s", "60s")
	ac.acquire("jobs/hourly", gone, "exclusive")

	ctx := mustBrowser(t, chromium, *screenshotWidth, 1000, 2*time.Minute)
	// Waiters, for the picture.
	go ac.waitAcquire(ctx, "db/migrate", w2, "2m")
	go ac.waitCampaign(ctx, "scheduler", w1, "2m")
	// The leader's page, with everything on it; should leadership move
	// meanwhile (a loaded machine), the new leader's.
	var err error
	for try := 0; try < 3; try++ {
		leader = c.WaitLeader()
		err = tryStep(ctx, 20*time.Second,
			chromedp.Navigate(c.URL(leader)+"/ui/"),
			chromedp.WaitVisible(`tr[data-election="scheduler"] .holder`, chromedp.ByQuery),
			chromedp.WaitVisible(`tr[data-election="scheduler"] .waiters[data-waiters="1"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`tr[data-lock="db/migrate"] .waiters[data-waiters="1"]`, chromedp.ByQuery),
			chromedp.WaitVisible(`tr[data-lock="jobs/hourly"] .delay`, chromedp.ByQuery),
			chromedp.WaitVisible(`#keys tr[data-key="scheduler/leader"] a.who .sname`, chromedp.ByQuery),
			waitText(`#c-state`, "Leader"),
			chromedp.WaitVisible(`#members tr[data-lag]:not(.leader)`, chromedp.ByQuery))
		if err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("render the leader's page: %v", err)
	}
	var png []byte
	step(t, ctx, "take the picture",
		chromedp.Sleep(2500*time.Millisecond), // a cluster refresh after every session exists
		chromedp.FullScreenshot(&png, 100),
	)
	if err := os.WriteFile(*screenshot, png, 0o644); err != nil { //nolint:gosec // G306: a picture for the docs, meant to be read by all
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
	ctx, cancelTab := chromedp.NewContext(ctx, chromedp.WithErrorf(quietErrorf))
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

// quietErrorf logs chromedp's errors as it does by default, but for the
// events of the browser's protocol it does not know (a <dialog> opening
// sends one), which change nothing it tracks.
func quietErrorf(format string, args ...any) {
	if strings.HasPrefix(format, "unhandled ") {
		return
	}
	log.Printf(format, args...)
}

// step runs actions in the browser, failing the test with what it was
// waiting for when they fail or time out.
// aclNode starts a one-node cluster with metrics and ACLs on, whose
// bootstrap token has the given secret, and returns its URL once
// the token exists.
func aclNode(t *testing.T, secret string) string {
	t.Helper()
	c := servertest.NewWith(t, 1, func(i int, cfg *server.Config) {
		withMetrics(i, cfg)
		cfg.ACL = true
		cfg.Node.ACLBootstrapSecret = secret
	})
	servertest.WaitFor(t, 10*time.Second, "the bootstrap token", func() bool {
		_, ok := c.Nodes[0].Node().ResolveToken(secret)
		return ok
	})
	return c.URL(0)
}

func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Run(sctx, actions...); err != nil {
		var page, around string
		_ = chromedp.Run(ctx, chromedp.Text("main", &page, chromedp.ByQuery),
			// What lies outside main: the notice, open dialogs, the address.
			chromedp.Evaluate(`JSON.stringify({hash: location.hash,
				notice: document.querySelector('#notice')?.textContent.trim() ?? null,
				dialogs: [...document.querySelectorAll('dialog')].map(d => ({id: d.id, open: d.open, text: d.textContent.trim()}))})`, &around))
		t.Fatalf("%s: %v\nthe page shows:\n%s\naround it: %s", what, err, page, around)
	}
	t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
}

// waitText waits until the element sel's text is want.
func waitText(sel, want string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`document.querySelector(%q)?.textContent.trim() === %q`, sel, want), nil,
		chromedp.WithPollingInterval(100*time.Millisecond))
}

// click clicks the element sel once it exists, finding and clicking it in
// one step in the page: the page redraws its tables as it reads the node
// (the sessions every few seconds), so a node chromedp found a moment
// before may be gone when it clicks.
func click(sel string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel), nil,
		chromedp.WithPollingInterval(50*time.Millisecond))
}

// waitContains waits until the element sel's text contains want.
func waitContains(sel, want string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`!!document.querySelector(%q)?.textContent.includes(%q)`, sel, want), nil,
		chromedp.WithPollingInterval(100*time.Millisecond))
}

// tryStep runs actions in the browser within limit and returns their
// error, for a step that may be tried again.
func tryStep(ctx context.Context, limit time.Duration, actions ...chromedp.Action) error {
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return chromedp.Run(sctx, actions...)
}

// poll waits until the JavaScript expression cond is true.
func poll(cond string) chromedp.Action {
	return chromedp.Poll(cond, nil, chromedp.WithPollingInterval(100*time.Millisecond))
}

// goTo follows a link to fragment within the page, as a click would.
func goTo(fragment string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`location.hash = %q`, fragment), nil)
}

// waitValue waits until the input sel's value is want.
func waitValue(sel, want string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`document.querySelector(%q)?.value === %q`, sel, want), nil,
		chromedp.WithPollingInterval(100*time.Millisecond))
}

// mustAttr waits until the element sel's attribute name is want.
func mustAttr(t *testing.T, ctx context.Context, sel, name, want string) {
	t.Helper()
	step(t, ctx, fmt.Sprintf("see %s=%q on %s", name, want, sel),
		chromedp.Poll(fmt.Sprintf(`document.querySelector(%q)?.getAttribute(%q) === %q`, sel, name, want), nil,
			chromedp.WithPollingInterval(100*time.Millisecond)))
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

// put sends a PUT that must succeed.
func (a apiClient) put(path, body string) {
	a.t.Helper()
	status, out, err := a.do(context.Background(), http.MethodPut, path, body)
	if err != nil || status != http.StatusOK {
		a.t.Errorf("PUT %s %s: %d %s %v", path, body, status, out, err)
	}
}

// get sends a GET that must succeed and decodes the answer into out.
func (a apiClient) get(path string, out any) {
	a.t.Helper()
	status, body, err := a.do(context.Background(), http.MethodGet, path, "")
	if err != nil || status != http.StatusOK {
		a.t.Fatalf("GET %s: %d %s %v", path, status, body, err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		a.t.Fatalf("GET %s: %v", path, err)
	}
}

func (a apiClient) session(name string) string {
	a.t.Helper()
	return a.sessionWith(name, "60s", "5s")
}

func (a apiClient) sessionWith(name, ttl, lockDelay string) string {
	a.t.Helper()
	var s api.Session
	if err := json.Unmarshal(a.post("/v1/sessions", `{"name":"`+name+`","ttl":"`+ttl+`","lock_delay":"`+lockDelay+`"}`), &s); err != nil || s.ID == "" {
		a.t.Fatalf("create session %s: %v", name, err)
	}
	return s.ID
}

// acquire takes lock name for session, trying once, and returns the token.
func (a apiClient) acquire(name, session, mode string) uint64 {
	a.t.Helper()
	var r api.AcquireResponse
	out := a.post("/v1/locks/"+name+"/acquire", `{"session":"`+session+`","mode":"`+mode+`"}`)
	if err := json.Unmarshal(out, &r); err != nil || r.Token == 0 {
		a.t.Fatalf("acquire %s: %s %v", name, out, err)
	}
	return r.Token
}

// waitAcquire is a blocking acquire that may outlive the test's checks, so
// it fails nothing: it ends with ctx and returns the token, or 0.
func (a apiClient) waitAcquire(ctx context.Context, name, session, wait string) uint64 {
	return a.waitAcquireMode(ctx, name, session, "exclusive", wait)
}

func (a apiClient) waitAcquireMode(ctx context.Context, name, session, mode, wait string) uint64 {
	status, out, err := a.do(ctx, http.MethodPost, "/v1/locks/"+name+"/acquire", `{"session":"`+session+`","mode":"`+mode+`","wait":"`+wait+`"}`)
	var r api.AcquireResponse
	if err != nil || status != http.StatusOK || json.Unmarshal(out, &r) != nil {
		return 0
	}
	return r.Token
}

// waitCampaign is a blocking campaign, as waitAcquire.
func (a apiClient) waitCampaign(ctx context.Context, name, session, wait string) {
	_, _, _ = a.do(ctx, http.MethodPost, "/v1/elections/"+name+"/campaign", `{"session":"`+session+`","wait":"`+wait+`"}`)
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
