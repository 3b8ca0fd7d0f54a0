package validate

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockd/lockd/jepsen/history"
)

// StaleLag is the lag bound of the stale-reads checker: a stale read
// invoked this long after a write was acknowledged, on a node that is
// connected and caught up, must show it. Followers learn of a commit on
// the next heartbeat (a tenth of the heartbeat timeout, tens of
// milliseconds); the bound is far above that on purpose, so that only a
// node that does not catch up at all fails it.
const StaleLag = 3 * time.Second

// StaleApplySlack is how long after a node said it had applied an index
// its ?stale reads must show it: Raft counts an entry applied once it has
// handed it to the state machine, which applies it a moment later.
const StaleApplySlack = 2 * time.Second

// FaultWindow is a stretch of the harness clock in which a fault of the
// schedule was in force: from just before its injection began to just
// after its heal returned.
type FaultWindow struct {
	Kind     string
	From, To int64
}

// StaleEvidence is what the stale-reads checker reads.
type StaleEvidence struct {
	Reads []history.StaleRead
	// Acks are acknowledged writes: the ?consistent reads' indexes during
	// the run (Run set), and those recorded once the cluster was healed
	// and every node caught up.
	Acks []history.Ack
	// Samples are the poller's answers of every node: what it had applied
	// and whom it followed.
	Samples []Sample
	// Faults are the windows in which a fault was in force.
	Faults []FaultWindow
}

// CheckStaleReads is CheckStale with reads and acks only.
func CheckStaleReads(reads []history.StaleRead, acks []history.Ack, lag time.Duration) Verdict {
	return CheckStale(StaleEvidence{Reads: reads, Acks: acks}, lag)
}

// CheckStale checks the ?stale reads:
//
//   - monotonic per node: a read of a lock invoked after another read of the
//     same lock by the same node process returned shows the same modify
//     index or a later one, and at the same index the same holder and
//     token (a process restarted from its log may start behind, so each
//     process is on its own);
//   - bounded lag once healed: a read of a lock invoked lag or more after a
//     write of that lock was acknowledged once the cluster was healed and
//     every node caught up shows that write's index or a later one;
//   - bounded lag during the run: the same for the writes acknowledged
//     while the run went on, for a read in a settled stretch: no fault in
//     force since the last heal, which is lag and the length of the faults
//     before it (Raft retries a follower it could not reach with a
//     backoff that grows with the failures, up to about as long as they
//     lasted) in the past, and every poll of the node in the lag before
//     the read found it following a leader (a node removed from the
//     cluster follows none, and is left behind for good);
//   - no lag behind its own state, faults or not: a read invoked
//     StaleApplySlack or more after its node's process said it had applied
//     an index shows every write acknowledged at or below that index,
//     unless the process was paused between (pause-* faults).
//
// A node cut off lags as far as its cut lasts; what it applied, it shows.
func CheckStale(ev StaleEvidence, lag time.Duration) Verdict {
	v := Verdict{Checker: StaleReads}
	reads := ev.Reads
	checkMonotonic(&v, reads)

	// Acknowledged writes per lock: healed ones in any order; the run's
	// by return (prefix maximum of the index) and by index.
	healed := map[string][]history.Ack{}
	type runAcks struct{ byReturn []history.Ack }
	run := map[string]*runAcks{}
	for _, a := range ev.Acks {
		if !a.Run {
			healed[a.Lock] = append(healed[a.Lock], a)
			continue
		}
		if run[a.Lock] == nil {
			run[a.Lock] = &runAcks{}
		}
		run[a.Lock].byReturn = append(run[a.Lock].byReturn, a)
	}
	all := map[string][]history.Ack{} // every ack by index, for the applied bound
	for l, as := range healed {
		all[l] = append(all[l], as...)
	}
	for l, r := range run {
		sort.Slice(r.byReturn, func(i, j int) bool { return r.byReturn[i].Return < r.byReturn[j].Return })
		all[l] = append(all[l], r.byReturn...)
		r.byReturn = append([]history.Ack(nil), r.byReturn...)
		for i := 1; i < len(r.byReturn); i++ { // prefix maximum: the highest index acknowledged by then
			if r.byReturn[i].Index < r.byReturn[i-1].Index {
				r.byReturn[i] = r.byReturn[i-1]
			}
		}
	}
	for l := range all {
		as := all[l]
		sort.Slice(as, func(i, j int) bool { return as[i].Index < as[j].Index })
	}
	settled := settledTimes(ev.Faults)
	polls := pollsByProcess(ev.Samples)

	checkedHealed, checkedRun, checkedApplied, pairs := 0, 0, 0, 0
	checked := 0
	for _, r := range reads {
		against := false
		// Bounded lag once healed.
		for _, a := range healed[r.Lock] {
			if r.Call < a.Return+int64(lag) {
				continue
			}
			against = true
			pairs++
			if r.Index < a.Index {
				v.addf("stale read of %s on %s at %s shows index %d, %v after index %d was acknowledged at %s",
					r.Lock, r.Node, history.Seconds(r.Call), r.Index, lag, a.Index, history.Seconds(a.Return))
			}
		}
		if against {
			checkedHealed++
		}
		ps := polls[procKey{r.Node, r.Proc}]
		// Bounded lag during the run, in a settled stretch.
		if ra := run[r.Lock]; ra != nil && r.Proc != 0 {
			since, ok := settled(r.Call)
			until := r.Call - int64(lag)
			i := sort.Search(len(ra.byReturn), func(i int) bool { return ra.byReturn[i].Return > until })
			if ok && since <= until && i > 0 && ps.followed(until, r.Call) {
				against = true
				checkedRun++
				if a := ra.byReturn[i-1]; r.Index < a.Index {
					v.addf("stale read of %s on %s at %s shows index %d, %v after index %d was acknowledged at %s, with no fault in force from %s on and the node following a leader",
						r.Lock, r.Node, history.Seconds(r.Call), r.Index, lag, a.Index, history.Seconds(a.Return), history.Seconds(since))
				}
			}
		}
		// No lag behind the node's own state.
		if s, ok := ps.appliedBefore(r.Call - int64(StaleApplySlack)); ok && !paused(ev.Faults, s.Return, r.Call) {
			as := all[r.Lock]
			i := sort.Search(len(as), func(i int) bool { return as[i].Index > s.Applied })
			if i > 0 {
				against = true
				checkedApplied++
				if a := as[i-1]; r.Index < a.Index {
					v.addf("stale read of %s on %s (process %d) at %s shows index %d, though the node said at %s that it had applied index %d, and index %d of the lock was acknowledged at %s",
						r.Lock, r.Node, r.Proc, history.Seconds(r.Call), r.Index, history.Seconds(s.Return), s.Applied, a.Index, history.Seconds(a.Return))
				}
			}
		}
		if against {
			checked++
		}
	}
	nRun := 0
	for _, r := range run {
		nRun += len(r.byReturn)
	}
	v.Cover(checked, "stale reads against acknowledged writes",
		"%d of %d stale reads against %d acknowledged writes (%d during the run): %d after the heal (%d pairs, lag %v), %d during the run in settled stretches, %d against their node's applied index; %d fault windows",
		checked, len(reads), len(ev.Acks), nRun, checkedHealed, pairs, lag, checkedRun, checkedApplied, len(ev.Faults))
	switch {
	case len(reads) == 0:
		v.undecidedIfNone("no stale read")
	case len(ev.Acks) == 0:
		v.undecidedIfNone("no acknowledged write to compare the stale reads against")
	default:
		v.undecidedIfNone(fmt.Sprintf("no stale read invoked %v or more after an acknowledged write of its lock on a caught-up node", lag))
	}
	return v
}

// checkMonotonic checks that each node process's reads of a lock never go
// back.
func checkMonotonic(v *Verdict, reads []history.StaleRead) {
	type key struct {
		node string
		proc int
		lock string
	}
	groups := map[key][]history.StaleRead{}
	var keys []key
	for _, r := range reads {
		k := key{r.Node, r.Proc, r.Lock}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range keys {
		byCall := groups[k]
		sort.SliceStable(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
		byReturn := append([]history.StaleRead(nil), byCall...)
		sort.SliceStable(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
		var floor *history.StaleRead // the highest read that returned before the current one's call
		next := 0
		for _, r := range byCall {
			for next < len(byReturn) && byReturn[next].Return < r.Call {
				if floor == nil || byReturn[next].Index > floor.Index {
					floor = &byReturn[next]
				}
				next++
			}
			switch {
			case floor == nil:
			case r.Index < floor.Index:
				v.addf("stale read of %s on %s went back: index %d at %s after index %d at %s",
					r.Lock, r.Node, r.Index, history.Seconds(r.Call), floor.Index, history.Seconds(floor.Return))
			case r.Index == floor.Index && (r.Holder != floor.Holder || r.Token != floor.Token):
				v.addf("stale read of %s on %s at %s: index %d with holder %s/%d, earlier %s/%d at the same index",
					r.Lock, r.Node, history.Seconds(r.Call), r.Index, holderName(r.Holder), r.Token, holderName(floor.Holder), floor.Token)
			}
		}
	}
}

// settledTimes returns a function that says, for a moment t, whether no
// fault was in force at t and from when on the cluster counts as settled:
// the last heal before t plus the length of the faults before it (Raft's
// backoff toward a follower it could not reach grows with the failures,
// to about as long as they lasted; faults that follow each other before
// the cluster settled count as one). With no fault before t, from the
// start.
func settledTimes(faults []FaultWindow) func(t int64) (int64, bool) {
	ws := append([]FaultWindow(nil), faults...)
	sort.Slice(ws, func(i, j int) bool { return ws[i].From < ws[j].From })
	settle := make([]int64, len(ws))
	var chain int64
	for i, w := range ws {
		if i == 0 || w.From >= settle[i-1] {
			chain = w.From
		}
		if w.To == history.Infinity {
			settle[i] = history.Infinity
			continue
		}
		settle[i] = w.To + (w.To - chain)
	}
	return func(t int64) (int64, bool) {
		i := sort.Search(len(ws), func(i int) bool { return ws[i].From > t }) // ws[:i] began by t
		since := int64(0)
		for _, w := range ws[:i] {
			if w.To >= t {
				return 0, false
			}
		}
		if i > 0 {
			since = settle[i-1]
			for _, s := range settle[:i] { // a chain's settle time is its latest
				since = max(since, s)
			}
		}
		return since, true
	}
}

// paused reports whether a pause fault was in force at some moment in
// [from, to]: a paused process's state machine may not yet have applied
// what its Raft had handed it when a read reaches it on waking.
func paused(faults []FaultWindow, from, to int64) bool {
	for _, w := range faults {
		if strings.HasPrefix(w.Kind, "pause") && w.From <= to && w.To >= from {
			return true
		}
	}
	return false
}

type procKey struct {
	node string
	proc int
}

// procPolls are one node process's poll samples, by return, and for each
// the one with the highest applied index up to it.
type procPolls struct {
	s    []Sample
	best []int
}

func pollsByProcess(samples []Sample) map[procKey]*procPolls {
	out := map[procKey]*procPolls{}
	for _, s := range samples {
		if s.Proc == 0 || s.Return == 0 {
			continue
		}
		k := procKey{s.Node, s.Proc}
		if out[k] == nil {
			out[k] = &procPolls{}
		}
		out[k].s = append(out[k].s, s)
	}
	for _, ps := range out {
		sort.Slice(ps.s, func(i, j int) bool { return ps.s[i].Return < ps.s[j].Return })
		ps.best = make([]int, len(ps.s))
		for i := range ps.s {
			if i > 0 && ps.s[ps.best[i-1]].Applied >= ps.s[i].Applied {
				ps.best[i] = ps.best[i-1]
			} else {
				ps.best[i] = i
			}
		}
	}
	return out
}

// appliedBefore returns the sample with the highest applied index of
// those that returned by t.
func (ps *procPolls) appliedBefore(t int64) (Sample, bool) {
	if ps == nil {
		return Sample{}, false
	}
	i := sort.Search(len(ps.s), func(i int) bool { return ps.s[i].Return > t })
	if i == 0 {
		return Sample{}, false
	}
	best := ps.s[ps.best[i-1]]
	return best, best.Applied > 0
}

// followed reports whether the process was polled within [from, to] and
// followed (or was) a leader in every such poll.
func (ps *procPolls) followed(from, to int64) bool {
	if ps == nil {
		return false
	}
	n := 0
	for i := sort.Search(len(ps.s), func(i int) bool { return ps.s[i].Return >= from }); i < len(ps.s) && ps.s[i].Return <= to; i++ {
		s := ps.s[i]
		if s.At < from {
			continue
		}
		if s.Leader == "" {
			return false
		}
		n++
	}
	return n > 0
}

func holderName(s string) string {
	if s == "" {
		return "free"
	}
	return short(s)
}
