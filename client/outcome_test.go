package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/test/servertest"
)

// How a lossyFront loses the answers to acquires and campaigns.
const (
	deliver  = iota // relay them
	withhold        // keep them until the client gives up
	as504           // answer 504 timeout instead, as a follower that lost the leader's answer does
)

// lossyFront stands between a client and the cluster. Every request reaches
// the cluster; the answers to acquires and campaigns are lost as mode says.
// It records the path and request number of every request it passes on.
type lossyFront struct {
	url  string
	mode atomic.Int32

	mu   sync.Mutex
	seen []seen
}

type seen struct {
	path string
	seq  uint64
}

func newLossyFront(t *testing.T, target string) *lossyFront {
	t.Helper()
	f := &lossyFront{}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ModifyResponse = func(resp *http.Response) error {
		p := resp.Request.URL.Path
		if !strings.HasSuffix(p, "/acquire") && !strings.HasSuffix(p, "/campaign") {
			return nil
		}
		switch f.mode.Load() {
		case withhold:
			<-resp.Request.Context().Done()
			return resp.Request.Context().Err()
		case as504:
			resp.Body.Close()
			body := `{"error":"the answer was lost; the outcome is unknown","code":"timeout"}`
			resp.StatusCode, resp.Status = http.StatusGatewayTimeout, "504 Gateway Timeout"
			resp.Body = io.NopCloser(strings.NewReader(body))
			resp.ContentLength = int64(len(body))
			resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		}
		return nil
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Seq uint64 `json:"seq"`
		}
		_ = json.Unmarshal(b, &req)
		f.mu.Lock()
		f.seen = append(f.seen, seen{r.URL.Path, req.Seq})
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	f.url = ts.URL
	return f
}

// requests returns what passed with a path ending in suffix.
func (f *lossyFront) requests(suffix string) []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []seen
	for _, s := range f.seen {
		if strings.HasSuffix(s.path, suffix) {
			out = append(out, s)
		}
	}
	return out
}

// holderOf returns the session that holds the lock name (or leads the
// election), "" if none, as the cluster answers a consistent read.
func holderOf(t *testing.T, cl *client.Client, lock, election string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if election != "" {
		l, err := cl.Election(ctx, election)
		if errors.Is(err, client.ErrNoElectionLeader) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return l.Session
	}
	l, err := cl.Lock(ctx, lock, client.Consistent)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Holders) == 0 {
		return ""
	}
	return l.Holders[0].Session
}

// TestMutex_UnknownOutcomeLeavesLockFree: a TryLock or Lock whose answer
// is lost after the server granted it (the caller's context ends first, or
// every attempt is answered 504) returns an error, and the lock does not
// stay with the session.
func TestMutex_UnknownOutcomeLeavesLockFree(t *testing.T) {
	c := servertest.New(t, 1)
	direct := mustClient(t, c.URLs()...)
	for _, tt := range []struct {
		name string
		mode int32
		try  bool
	}{
		{"TryLock, answer withheld", withhold, true},
		{"TryLock, answered 504", as504, true},
		{"Lock, answer withheld", withhold, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			front := newLossyFront(t, c.URL(0))
			s := mustSession(t, mustClient(t, front.url), client.WithLockDelay(0))
			name := "unknown/" + strings.ReplaceAll(tt.name, " ", "-")
			name = strings.NewReplacer(",", "").Replace(name)
			m := client.NewMutex(s, name)
			front.mode.Store(tt.mode)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			var err error
			if tt.try {
				err = m.TryLock(ctx)
			} else {
				err = m.Lock(ctx)
			}
			cancel()
			if err == nil {
				t.Fatal("acquire with a lost answer succeeded")
			}
			if m.Held() {
				t.Fatalf("Held after %v", err)
			}
			acquires := front.requests("/acquire")
			if len(acquires) == 0 {
				t.Fatal("the acquire never reached the cluster")
			}
			for _, a := range acquires {
				if a.seq != acquires[0].seq {
					t.Errorf("retries carried request numbers %v: a retry must repeat its number", acquires)
					break
				}
			}
			waitFor(t, 10*time.Second, "the lock to be free of the session", func() bool {
				return holderOf(t, direct, name, "") != s.ID()
			})
			if rel := front.requests("/release"); len(rel) == 0 || rel[0].seq <= acquires[0].seq {
				t.Errorf("releases %v after acquires %v: the release must be numbered after the acquire", rel, acquires)
			}
			// The lock can be taken again, and the give-back does not undo it.
			front.mode.Store(deliver)
			if err := m.TryLock(ctxT(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
			if !m.Held() || holderOf(t, direct, name, "") != s.ID() {
				t.Fatalf("after a new TryLock: held %v, server's holder %q", m.Held(), holderOf(t, direct, name, ""))
			}
		})
	}
}

// TestElection_UnknownOutcomeResigns is the same for a campaign.
func TestElection_UnknownOutcomeResigns(t *testing.T) {
	c := servertest.New(t, 1)
	direct := mustClient(t, c.URLs()...)
	front := newLossyFront(t, c.URL(0))
	s := mustSession(t, mustClient(t, front.url), client.WithLockDelay(0))
	e := client.NewElection(s, "unknown/campaign")
	front.mode.Store(withhold)
	if err := e.Campaign(ctxT(t, time.Second), "v"); err == nil {
		t.Fatal("campaign with a lost answer succeeded")
	}
	if e.Leading() {
		t.Fatal("Leading after a failed campaign")
	}
	waitFor(t, 10*time.Second, "the election to be free of the session", func() bool {
		return holderOf(t, direct, "", "unknown/campaign") != s.ID()
	})
}

// TestMutex_FailedRepeatKeepsHolding: a Mutex or Election that already
// holds keeps its holding when a repeated Lock or Campaign fails with an
// unknown outcome: the repeat changed nothing on the server, and giving
// the lock back would leave the program believing it holds a lock it does
// not.
func TestMutex_FailedRepeatKeepsHolding(t *testing.T) {
	c := servertest.New(t, 1)
	direct := mustClient(t, c.URLs()...)
	front := newLossyFront(t, c.URL(0))
	s := mustSession(t, mustClient(t, front.url), client.WithLockDelay(0))
	m := client.NewMutex(s, "repeat/lock")
	e := client.NewElection(s, "repeat/election")
	if err := m.Lock(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := e.Campaign(ctxT(t, 5*time.Second), "v"); err != nil {
		t.Fatal(err)
	}
	front.mode.Store(withhold)
	if err := m.Lock(ctxT(t, 500*time.Millisecond)); err == nil {
		t.Fatal("repeated Lock with a lost answer succeeded")
	}
	if err := e.Campaign(ctxT(t, 500*time.Millisecond), "v"); err == nil {
		t.Fatal("repeated Campaign with a lost answer succeeded")
	}
	time.Sleep(time.Second) // a background give-back, if any, has been sent by now
	if n := len(front.requests("/release")) + len(front.requests("/resign")); n != 0 {
		t.Errorf("%d releases or resigns sent for a holding the program still has", n)
	}
	if !m.Held() || holderOf(t, direct, "repeat/lock", "") != s.ID() {
		t.Errorf("lock: Held %v, server's holder %q, want both this session", m.Held(), holderOf(t, direct, "repeat/lock", ""))
	}
	if !e.Leading() || holderOf(t, direct, "", "repeat/election") != s.ID() {
		t.Errorf("election: Leading %v, server's leader %q, want both this session", e.Leading(), holderOf(t, direct, "", "repeat/election"))
	}
}
