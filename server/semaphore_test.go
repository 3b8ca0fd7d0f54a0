package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/test/servertest"
)

// semAcquire sends an acquire of one of limit slots of name.
func (a *nodeAPI) semAcquire(name, session string, limit int, wait time.Duration) (api.AcquireResponse, int, api.Error) {
	a.t.Helper()
	var r api.AcquireResponse
	st, e := a.do("POST", "/v1/locks/"+name+"/acquire", api.AcquireRequest{Session: session, Limit: limit, Wait: api.Duration(wait)}, &r)
	return r, st, e
}

// A semaphore of 3 on a 3-node cluster, every request sent to a follower
// (which forwards it): up to three holders with tokens of their own; an
// acquire with another limit is 400 and changes nothing; when a holder's
// session expires its slot stays in its lock-delay while another free slot
// is granted at once; a waiter gets the delayed slot when the delay ends;
// a release hands its slot to the next waiter in one commit.
func TestCluster_Semaphore(t *testing.T) {
	c := servertest.New(t, 3)
	leader := c.WaitLeader()
	l := newAPI(t, c, leader)
	f := newAPI(t, c, c.Follower(leader))
	const delay = 3 * time.Second
	a, cs, d, e := f.session(30*time.Second, 0), f.session(30*time.Second, 0), f.session(30*time.Second, 0), f.session(30*time.Second, 0)
	b := f.session(time.Second, delay) // no keepalives: it expires
	ra, st, er := f.semAcquire("pool", a, 3, 0)
	if st != 200 || ra.Limit != 3 || ra.Mode != api.ModeExclusive {
		t.Fatalf("a: %d %+v %+v", st, ra, er)
	}
	rb, st, er := f.semAcquire("pool", b, 3, 0)
	if st != 200 || rb.Token <= ra.Token {
		t.Fatalf("b: %d %+v %+v", st, rb, er)
	}
	before := l.cluster().CommitIndex
	if _, st, er := f.semAcquire("pool", cs, 2, 0); st != 400 || er.Code != api.CodeBadRequest || !strings.Contains(er.Message, "limit 3") {
		t.Fatalf("another limit: %d %+v", st, er)
	}
	if _, st, er := f.acquire("pool", cs, 0); st != 400 || er.Code != api.CodeBadRequest {
		t.Fatalf("no limit on a semaphore: %d %+v", st, er)
	}
	if after := l.cluster().CommitIndex; after != before {
		t.Fatalf("refused acquires without a number committed %d entries", after-before)
	}
	servertest.WaitFor(t, 5*time.Second, "b to expire", func() bool {
		st, _ := f.do("GET", "/v1/sessions/"+b, nil, nil)
		return st == 410
	})
	var lk api.Lock
	read := func() api.Lock {
		lk = api.Lock{} // a field the answer leaves out must not keep an older value
		f.must("GET", "/v1/locks/pool", nil, &lk)
		return lk
	}
	read()
	if lk.Limit != 3 || len(lk.Holders) != 1 || lk.Holders[0].Session != a || len(lk.DelayedSlots) != 1 || lk.DelayedSlots[0].Session != b || lk.DelayedSlots[0].Until.IsZero() {
		t.Fatalf("after b's expiry: %+v", lk)
	}
	// The third slot is neither held nor delayed: granted at once.
	rc, st, er := f.semAcquire("pool", cs, 3, 0)
	if st != 200 {
		t.Fatalf("c beside b's delayed slot: %d %+v", st, er)
	}
	// Now only b's delayed slot is not held: a try is refused with its delay.
	if _, st, er := f.semAcquire("pool", d, 3, 0); st != 409 || er.Code != api.CodeLockDelay || er.RetryAfter <= 0 {
		t.Fatalf("d's try inside b's slot delay: %d %+v", st, er)
	}
	// queue sends a blocking acquire by session and waits until it is
	// the queue's n-th; its answer comes on the channel.
	queue := func(session string, n int) <-chan api.AcquireResponse {
		grant := make(chan api.AcquireResponse, 1)
		go func() {
			r, _, _ := f.semAcquire("pool", session, 3, time.Minute)
			grant <- r
		}()
		servertest.WaitFor(t, 5*time.Second, "a waiter to queue", func() bool { return len(read().Waiters) == n })
		return grant
	}
	grantD := queue(d, 1)
	grantE := queue(e, 2)
	var rd api.AcquireResponse
	select {
	case rd = <-grantD:
	case <-time.After(delay + 5*time.Second):
		t.Fatal("d not granted after b's slot delay")
	}
	read()
	if rd.Session != d || len(lk.Holders) != 3 || len(lk.DelayedSlots) != 0 || len(lk.Waiters) != 1 || lk.Waiters[0].Session != e {
		t.Fatalf("after b's delay: d %+v, pool %+v", rd, lk)
	}
	// A release hands its slot to e, in the release's own entry.
	before = l.cluster().CommitIndex
	f.must("POST", "/v1/locks/pool/release", api.SessionRequest{Session: a}, nil)
	re := <-grantE
	if after := l.cluster().CommitIndex; re.Session != e || after != before+1 || re.Token != after {
		t.Fatalf("hand-off to e: %+v, commit %d -> %d", re, before, after)
	}
	for _, tok := range []uint64{rc.Token, rd.Token, re.Token} {
		var v api.CheckResponse
		f.must("POST", "/v1/locks/pool/check", api.CheckRequest{Token: tok}, &v)
		if !v.Valid {
			t.Errorf("token %d of a holder is not valid", tok)
		}
	}
	var v api.CheckResponse
	f.must("POST", "/v1/locks/pool/check", api.CheckRequest{Token: ra.Token}, &v)
	if v.Valid {
		t.Errorf("a's token %d still valid after its release", ra.Token)
	}
}
