package traffic

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/history"
)

// electionWorker campaigns for ElectionName with a value of its own,
// proclaims new values while it leads, and resigns. An election is an
// exclusive lock with a value, so campaign and resign go into the history
// as acquire and release, with the value in Op.Value; every value is
// unique in the run, so that a read shows which campaign or proclaim it
// saw.
func (t *Traffic) electionWorker(ctx context.Context, rng *rand.Rand) {
	w := t.newWorker(t.electionToken, []string{ElectionName}, rng)
	defer w.endSession()
	rec := t.rec
	values := 0
	for sleep(ctx, jitter(rng, 20*time.Millisecond, 200*time.Millisecond)) {
		s := w.session(ctx)
		if s == nil || !s.Alive() {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		leave, ok := t.gate.pass(ctx)
		if !ok {
			break
		}
		e := client.NewElection(s, ElectionName)
		t.count("campaign")
		values++
		op := rec.Invoke(history.Op{Client: w.id, Lock: ElectionName, Kind: history.Acquire, Session: s.ID(),
			Value: fmt.Sprintf("worker-%d/%d", w.id, values)})
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		err := e.Campaign(octx, op.Value)
		cancel()
		st, code := status(err)
		if st == history.OK {
			if op.Token = e.Token(); op.Token == 0 {
				st = history.Unknown
			}
		}
		op.Code, op.Err = code, errString(err)
		rec.Complete(op, st)
		if err != nil && st == history.Unknown {
			recordGiveBack(rec, op)
		}
		leave()
		if st != history.OK {
			continue
		}
		w.watchHold(ctx, ElectionName, op.Token, e.Lost(), s)
		for range rng.IntN(4) {
			if !sleep(ctx, jitter(rng, 20*time.Millisecond, 150*time.Millisecond)) || !e.Leading() {
				break
			}
			values++
			t.proclaim(ctx, w, e, fmt.Sprintf("worker-%d/%d", w.id, values))
		}
		sleep(ctx, jitter(rng, 50*time.Millisecond, 250*time.Millisecond))
		leave = t.gate.passSoon(ctx)
		t.count("resign")
		op = rec.Invoke(history.Op{Client: w.id, Lock: ElectionName, Kind: history.Release, Session: s.ID()})
		w.giveUp(ElectionName, op.Call)
		octx, cancel = context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		err = e.Resign(octx)
		cancel()
		st, code = status(err)
		op.Code, op.Err = code, errString(err)
		rec.Complete(op, st)
		leave()
	}
}

// proclaim sets a new value for the election w's session leads and
// records it. A refusal (not the leader) changes nothing.
func (t *Traffic) proclaim(ctx context.Context, w *worker, e *client.Election, value string) {
	leave, ok := t.gate.pass(ctx)
	if !ok {
		return
	}
	defer leave()
	t.count("proclaims")
	op := t.rec.Invoke(history.Op{Client: w.id, Lock: ElectionName, Kind: history.Proclaim, Session: w.s.ID(), Value: value})
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	err := e.Proclaim(octx, value)
	cancel()
	st, code := status(err)
	if errors.Is(err, client.ErrNotLeader) {
		st, code = history.Fail, "not_leader"
	}
	op.Code, op.Err = code, errString(err)
	t.rec.Complete(op, st)
}

// electionReader reads the election's leader, recording the value it
// sees, and keeps an Observe running to exercise blocking queries; every
// leader Observe delivers must carry a token no lower than the one before,
// and for the same token a value no older.
func (t *Traffic) electionReader(ctx context.Context) {
	c := t.newClient(t.nextClient(), t.electionToken)
	id := t.nextClient()
	obs := c.Observe(ctx, ElectionName)
	var lastObserved uint64
	var lastValue string
	ticker := time.NewTicker(30 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			if obs != nil {
				for range obs { // drain until Observe closes the channel
				}
			}
			return
		case l, ok := <-obs:
			if !ok {
				obs = nil
				continue
			}
			t.count("observe")
			if l.Token != 0 && l.Token < lastObserved {
				// An event starting with VIOLATION fails the run
				// (validate.CheckEvents counts it).
				t.rec.Eventf("VIOLATION observe went back: token %d after %d", l.Token, lastObserved)
			}
			if l.Token != 0 && l.Token == lastObserved && valueSeq(l.Value) < valueSeq(lastValue) {
				// One leadership's values are one worker's, numbered in
				// the order it proclaimed them.
				t.rec.Eventf("VIOLATION observe went back: value %q after %q of token %d", l.Value, lastValue, l.Token)
			}
			if l.Token != 0 && l.Token >= lastObserved {
				lastObserved, lastValue = l.Token, l.Value
			}
		case <-ticker.C:
			t.count("leader")
			op := t.rec.Invoke(history.Op{Client: id, Lock: ElectionName, Kind: history.Read})
			octx, cancel := context.WithTimeout(ctx, time.Second)
			l, err := c.Election(octx, ElectionName)
			cancel()
			if errors.Is(err, client.ErrNoElectionLeader) {
				err = nil
			}
			st, code := status(err)
			if st != history.OK {
				st = history.Fail
			}
			op.Holder, op.Token, op.Value, op.Code, op.Err = l.Session, l.Token, l.Value, code, errString(err)
			t.rec.Complete(op, st)
		}
	}
}

// valueSeq is the number a worker gave a value of its (worker-<id>/<n>),
// or -1.
func valueSeq(v string) int {
	_, n, ok := strings.Cut(v, "/")
	if !ok {
		return -1
	}
	x, err := strconv.Atoi(n)
	if err != nil {
		return -1
	}
	return x
}
