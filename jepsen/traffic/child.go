package traffic

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/internal/certs"
	"github.com/lockd/lockd/jepsen/history"
)

// Environment of a child fence client.
const (
	EnvRole      = "LOCKD_JEPSEN_ROLE"
	EnvEndpoints = "LOCKD_JEPSEN_ENDPOINTS"
	EnvResource  = "LOCKD_JEPSEN_RESOURCE"
	EnvClient    = "LOCKD_JEPSEN_CLIENT"
	EnvTTL       = "LOCKD_JEPSEN_TTL"
	EnvDeadline  = "LOCKD_JEPSEN_DEADLINE" // unix milliseconds
	// On a secured cluster: the CA and client certificate files, and the
	// child's own token.
	EnvCA    = "LOCKD_JEPSEN_CACERT"
	EnvCert  = "LOCKD_JEPSEN_CERT"
	EnvKey   = "LOCKD_JEPSEN_KEY"
	EnvToken = "LOCKD_JEPSEN_TOKEN" //nolint:gosec // G101: the name of the variable that carries the token, not a token
)

// IsFenceClient reports whether this process was started as a child fence
// client (the harness binary re-executes itself).
func IsFenceClient() bool { return os.Getenv(EnvRole) == "fence-client" }

func joinComma(s []string) string { return strings.Join(s, ",") }

// RunFenceClient is the main function of a child fence client. It takes
// FencedLock with try acquires and, while it holds it, repeats: check that
// the library still believes it holds the lock, wait a moment, write to
// the resource with its token. A SIGSTOP that lands in the wait lets the
// session expire; on waking the client writes with its old token, which
// only fencing stops. It exits at its deadline. It returns an exit code.
func RunFenceClient() int {
	eps := strings.Split(os.Getenv(EnvEndpoints), ",")
	res, name := os.Getenv(EnvResource), os.Getenv(EnvClient)
	ttl, err := time.ParseDuration(os.Getenv(EnvTTL))
	ms, err2 := strconv.ParseInt(os.Getenv(EnvDeadline), 10, 64)
	if err != nil || err2 != nil || res == "" {
		fmt.Fprintln(os.Stderr, "fence client: bad environment")
		return 2
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.UnixMilli(ms))
	defer cancel()
	var tc *tls.Config
	if ca := os.Getenv(EnvCA); ca != "" {
		if tc, err = certs.ClientTLS(ca, os.Getenv(EnvCert), os.Getenv(EnvKey)); err != nil {
			fmt.Fprintln(os.Stderr, "fence client:", err)
			return 2
		}
	}
	access := Access{TLS: tc, Token: os.Getenv(EnvToken)}
	c, err := access.Client(client.Config{Endpoints: eps, RequestTimeout: time.Second, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	post := func(path string, v any) int {
		b, _ := json.Marshal(v)
		resp, err := hc.Post(res+path, "application/json", bytes.NewReader(b))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var s *client.Session
	// pending is the harness time of the first acquire of the current
	// session whose outcome is unknown since it last surely held nothing
	// (0: none): that acquire may have been granted, and the library's
	// give-back may not have landed, so a later acquire that finds the
	// lock held reports a grant made as early as then (the checkers order
	// the grant by its window, as effectiveCalls does for the workers).
	var pending int64
	for sleep(ctx, time.Duration(50+rand.IntN(200))*time.Millisecond) {
		if s == nil || !s.Alive() {
			pending = 0
			if s != nil {
				s.Close()
			}
			cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
			s, err = client.NewSession(cctx, c, client.WithTTL(ttl), client.WithLockDelay(0))
			ccancel()
			if err != nil {
				s = nil
				continue
			}
		}
		m := client.NewMutex(s, FencedLock)
		t0 := time.Now()
		call := resourceNow(hc, res) // before the invocation, on the harness clock
		t1 := time.Now()
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		err := m.TryLock(actx)
		acancel()
		got := time.Now()
		if err != nil {
			switch st, code := status(err); {
			case st == history.Unknown && pending == 0:
				pending = max(call, 1) // 1: since the start, when the resource did not answer
			case st == history.Fail && pending != 0 && (code == api.CodeLockHeld || code == api.CodeLockDelay):
				pending = max(call, pending) // not held when refused: a pending attempt can land only after
			}
			continue
		}
		tok := m.Token()
		lost := make(chan time.Time, 1)
		go func(ch <-chan struct{}) { <-ch; lost <- time.Now() }(m.Lost())
		gcall := call
		if pending != 0 {
			gcall = min(gcall, pending)
		}
		post("/grant", Grant{Client: name, Session: s.ID(), Token: tok, Call: gcall})
		for range 3 + rand.IntN(4) {
			if !m.Held() {
				break
			}
			time.Sleep(150 * time.Millisecond) // the window a pause is meant to land in
			st := post("/write", Write{Client: name, Session: s.ID(), Token: tok})
			fmt.Fprintf(os.Stderr, "%s write token %d -> %d\n", time.Now().Format(time.StampMilli), tok, st)
		}
		// The belief ends at the latest now (Unlock comes next), or when
		// Lost closed, or at the session's local deadline.
		end := time.Now()
		select {
		case at := <-lost:
			end = at
		default:
		}
		if d := s.Deadline(); d.Before(end) {
			end = d
		}
		post("/released", holdReport(name, s.ID(), tok, call, t0, t1, got, end))
		uctx, ucancel := context.WithTimeout(ctx, 2*time.Second)
		if m.Unlock(uctx) == nil {
			pending = 0 // an acknowledged release ends the window, as in effectiveCalls
		}
		ucancel()
	}
	if s != nil {
		s.Close()
	}
	return 0
}

// holdReport converts a hold from got (the acquire's return) to end (the
// belief's end) on this process's clock to the harness clock, through one
// reading h of it taken between t0 and t1: any moment t maps into
// [h-(t1-t), h+(t-t0)], so From = h+(got-t0) is no earlier than the
// acquire's return, and To = h+(end-t1) no later than the belief's end.
func holdReport(name, session string, token uint64, h int64, t0, t1, got, end time.Time) HoldReport {
	r := HoldReport{Client: name, Session: session, Token: token}
	if h > 0 {
		r.From, r.To = h+int64(got.Sub(t0)), h+int64(end.Sub(t1))
	}
	return r
}

// resourceNow asks the resource for the harness clock. It answers 0, the
// start of the run (a bound that still holds), when the resource does not
// answer.
func resourceNow(hc *http.Client, res string) int64 {
	resp, err := hc.Post(res+"/acquiring", "application/json", nil)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var at int64
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&at) != nil {
		return 0
	}
	return at
}
