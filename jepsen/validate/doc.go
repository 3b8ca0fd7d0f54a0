// Package validate is the harness's checkers. Each reads a run's history
// (operations, holds, writes to the fenced resource, cluster polls) and
// returns a Verdict: how many violations it found and a few lines about
// each. The checkers are:
//
//  1. linearizability: each lock's history against model.Lock, and each
//     election's, with the values its campaigns and proclaims set and its
//     leader reads saw, against model.Election, with porcupine, one
//     partition per name;
//  2. tokens: every grant's token is unique and tokens grow in real-time
//     order;
//  3. lease timing: no successful acquire completes while another
//     client's library believes it holds the lock (the child fence
//     clients' holds and grants among them; a paused client's belief
//     counts until its pause began);
//  4. fencing: the fenced lock's grants, the child processes' among them,
//     have tokens that grow in real-time order (what fencing relies on),
//     and the fenced resource never accepted a write whose token is lower
//     than one it had accepted before;
//  5. durability: every acknowledged acquire and release survives a kill
//     -9 and restart of every node, and sessions alive before it survive
//     with their locks and a fresh TTL (the runner gathers the evidence);
//  6. leaders: at most one leader per Raft term, and, for the classic
//     election modes, at most one coordinator at a time;
//  7. events: the violations the workloads saw for themselves while the
//     run went on (Observe delivering an older token than before), which
//     they record on the timeline;
//  8. master-lease: lockd's own promise, from every node's lease log (its
//     master-lease intervals in the host's CLOCK_MONOTONIC): no two nodes
//     may ever serve under a master lease at the same moment, and no two
//     hold one in the same term;
//  9. fifo: waiters a read saw queued in some order are granted in that
//     order (hand-offs go to the head of the queue);
//  10. lock-delay: a lock its holder's session lost by expiry is granted to
//     nobody else before the session's lock-delay has passed;
//  11. stale reads: ?stale reads are monotonic per node process; they lag
//     an acknowledged write by at most StaleLag once the cluster is healed,
//     and during the run in settled stretches (no fault in force for long
//     enough, the node following a leader); and, faults or not, they show
//     every acknowledged write at or below the index their node said it
//     had applied (writes are acknowledged throughout the run by the
//     ?consistent reads);
//  12. quiet keepalives: in a window with no faults and no workload, where
//     only keepalives run, the leader's commit index does not move;
//  13. request numbers: a request repeated with its first number gets the
//     first answer while that holds, refusals included, and is never
//     granted anew after the session released the lock;
//  14. queue: a waiter a read saw queued is granted or leaves the queue for
//     a stated reason (its wait ran out, its session ended, it released),
//     and no later waiter is granted while it still waits ahead;
//  15. kv: the namespace workload's registers (puts, compare-and-swaps on
//     the modify index, deletes, two-key transactions, reads) against
//     model.KV, and no put repeated with its request number applied
//     again;
//  16. watches: every watcher's events in order, none twice, none that
//     no write made, every acknowledged write within a watch's span
//     delivered at its index, and watchers alike where they overlap;
//  17. ephemeral: no read lists an ephemeral key after its session's end
//     was committed;
//  18. fenced-writes: no write guarded by a token its holder had given up
//     (released, or granted since to another) accepted, and the accepted
//     ones' tokens never going down in the store's order.
//
// Every checker says what it checked (Verdict.Coverage, with the count
// Checked of Unit that a campaign sums). A checker that could not decide
// says so instead of passing (Undecided, with the reason): porcupine's
// timeout, and every checker that found nothing to check for lack of
// evidence (stale reads with no acknowledged write to compare against,
// fifo with no ordered pair of waiters, lock-delay with no expiry,
// request numbers with no repeat, ...). A checker that is not in force in
// a run (its workload was not selected, or the election mode promises
// nothing it checks) is Off, with the reason: it neither passes nor fails
// the run, and a campaign row leaves it out of the checkers in force.
package validate

import "fmt"

// Verdict is one checker's result.
type Verdict struct {
	Checker    string
	Violations int
	// Undecided is set when the checker could not decide (and why): an
	// undecided verdict fails a run as a violation does.
	Undecided string
	// Off is set when the checker was not in force in the run (and why):
	// its workload did not run by choice, or the mode promises nothing it
	// checks. An Off verdict checks nothing and fails nothing.
	Off string
	// Checked is how many things the checker checked, Unit what they are
	// ("lock-delay expiries"), and Coverage the whole line a report shows
	// ("9 of 1,496 stale reads against 1 acknowledged write"). A checker
	// that checked nothing is undecided (or Off).
	Checked  int
	Unit     string
	Coverage string
	// Details describe the first violations (and notes).
	Details []string
	// Artifact is a file the checker wrote (for example porcupine's HTML).
	Artifact string
}

// OK reports whether the checker found nothing wrong and decided (an Off
// checker is OK: it was not asked).
func (v Verdict) OK() bool { return v.Violations == 0 && v.Undecided == "" }

// String renders the verdict on one line, with what it checked.
func (v Verdict) String() string {
	cov := ""
	if v.Coverage != "" {
		cov = ": checked " + v.Coverage
	}
	switch {
	case v.Violations > 0:
		return fmt.Sprintf("%-16s FAIL %d violation(s)%s", v.Checker, v.Violations, cov)
	case v.Undecided != "":
		return fmt.Sprintf("%-16s UNDECIDED (%s)%s", v.Checker, v.Undecided, cov)
	case v.Off != "":
		return fmt.Sprintf("%-16s off (%s)", v.Checker, v.Off)
	}
	return fmt.Sprintf("%-16s ok%s", v.Checker, cov)
}

// Cover records what the checker checked: n of unit, and the whole line.
func (v *Verdict) Cover(n int, unit, format string, args ...any) {
	v.Checked, v.Unit, v.Coverage = n, unit, fmt.Sprintf(format, args...)
}

// undecidedIfNone makes a verdict that checked nothing undecided, for
// reason: no evidence is no pass. A violation found stands.
func (v *Verdict) undecidedIfNone(reason string) {
	if v.Checked == 0 && v.Violations == 0 && v.Undecided == "" {
		v.Undecided = reason
	}
}

// NotInForce returns v marked not in force, for reason: what it found is
// kept for the record, but it neither passes nor fails the run. A
// violation it found stands (Off does not hide one).
func (v Verdict) NotInForce(reason string) Verdict {
	v.Off, v.Undecided = reason, ""
	return v
}

// maxDetails bounds the lines a verdict keeps.
const maxDetails = 20

func (v *Verdict) addf(format string, args ...any) {
	v.Violations++
	if len(v.Details) < maxDetails {
		v.Details = append(v.Details, fmt.Sprintf(format, args...))
	}
}

// Checker names, as reports and self-tests use them.
const (
	Linearizability = "linearizability"
	Tokens          = "tokens"
	LeaseTiming     = "lease-timing"
	Fencing         = "fencing"
	Durability      = "durability"
	Leaders         = "leaders"
	Events          = "events"
	FIFO            = "fifo"
	LockDelay       = "lock-delay"
	StaleReads      = "stale-reads"
	QuietKeepalives = "quiet-keepalives"
	RequestNumbers  = "request-numbers"
	MasterLease     = "master-lease"
	Queue           = "queue"
	KV              = "kv"
	Watches         = "watches"
	Ephemeral       = "ephemeral"
	FencedWrites    = "fenced-writes"
)
