package validate

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/model"
	"github.com/lockd/lockd/jepsen/traffic"
)

// CheckKV checks the namespace workload's registers against model.KV
// with porcupine, one partition per group, and that no put repeated with
// its request number was applied again (answered ok). On a violation it
// writes porcupine's visualization to dir/kv-linearizability.html.
func CheckKV(ops []history.KVOp, timeout time.Duration, dir string) Verdict {
	v := Verdict{Checker: KV}
	var last int64
	for _, op := range ops {
		last = max(last, op.Call)
		if op.Return != history.Infinity {
			last = max(last, op.Return)
		}
	}
	var pops []porcupine.Operation
	repeats := 0
	for _, op := range ops {
		if op.Kind == history.KVRepeat {
			repeats++
			if op.Status == history.OK {
				v.addf("%s: a put repeated with its request number was applied again: %s", op.Group, model.DescribeKV(op))
			}
		}
		if op.Kind == history.KVGet && op.Status != history.OK {
			continue // nothing observed, no effect
		}
		ret := op.Return
		if ret == history.Infinity {
			ret = last + 1
		}
		pops = append(pops, porcupine.Operation{ClientId: op.Client, Input: op, Output: op, Call: op.Call, Return: ret})
	}
	res, info := porcupine.CheckOperationsVerbose(kvModel, pops, timeout)
	switch res {
	case porcupine.Illegal:
		v.addf("a group of registers is not linearizable%s (see the visualization)", kvWhere(pops, info))
		path := filepath.Join(dir, "kv-linearizability.html")
		if err := porcupine.VisualizePath(kvModel, info, path); err == nil {
			v.Artifact = path
		}
	case porcupine.Unknown:
		v.Undecided = "porcupine timed out after " + timeout.String()
	}
	v.Cover(len(pops), "operations", "%d operations of registers, %d repeated puts", len(pops), repeats)
	v.undecidedIfNone("no operation of a register to check")
	return v
}

// kvModel is model.KV as porcupine checks it.
var kvModel = model.KV.ToModel()

// kvWhere names the groups porcupine could not linearize and the
// earliest operation it could not place in each.
func kvWhere(pops []porcupine.Operation, info porcupine.LinearizationInfo) string {
	var out []string
	for _, partials := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		for _, pl := range partials {
			if len(pl) > len(longest) {
				longest = pl
			}
		}
		if len(longest) == 0 {
			continue
		}
		group := longest[0].Input.(history.KVOp).Group
		placed := map[int64]bool{}
		for _, p := range longest {
			placed[p.Input.(history.KVOp).ID] = true
		}
		total := 0
		var first *porcupine.Operation
		for i := range pops {
			op := pops[i].Input.(history.KVOp)
			if op.Group != group {
				continue
			}
			total++
			if !placed[op.ID] && (first == nil || pops[i].Call < first.Call) {
				first = &pops[i]
			}
		}
		if first == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s: the longest linearizable prefix has %d of %d operations; the earliest left out is %s, invoked at %.3fs",
			group, len(longest), total, model.DescribeKV(first.Input.(history.KVOp)), float64(first.Call)/1e9))
	}
	if len(out) == 0 {
		return ""
	}
	return ": " + strings.Join(out, "; ")
}

// CheckWatches checks what the watchers of the namespace received against
// the writes the workload attempted: each segment's events in index
// order, none twice; every put event's value one that a write of that key
// attempted and that was not refused, every delete event one that a
// delete (or the end of an ephemeral key's session) could cause; every
// acknowledged write whose index lies within a segment's span (after its
// read, up to its last event) delivered in it at that index; and any two
// segments alike where their spans overlap.
func CheckWatches(logs []traffic.WatchLog, writes []traffic.KVWrite) Verdict {
	v := Verdict{Checker: Watches}
	type kv struct{ key, value string }
	attempted := map[kv]history.Status{} // the best status of a write of value to key
	deletable := map[string]bool{}
	for _, w := range writes {
		if w.Delete {
			if w.Status != history.Fail {
				deletable[w.Key] = true
			}
			continue
		}
		k := kv{w.Key, w.Value}
		if st, ok := attempted[k]; !ok || st == history.Fail {
			attempted[k] = w.Status
		}
	}
	acked := 0
	events := 0
	for _, l := range logs {
		name := fmt.Sprintf("watcher %d segment %d (after %d)", l.Watcher, l.Segment, l.After)
		seen := map[string]traffic.WatchedEvent{} // by index and key
		var prev uint64
		for _, e := range l.Events {
			events++
			id := fmt.Sprintf("%d %s", e.Index, e.Key)
			switch {
			case e.Index <= l.After:
				v.addf("%s: event %s at index %d, not after the read it follows", name, e.Key, e.Index)
			case e.Index < prev:
				v.addf("%s: event %s at index %d after one at index %d", name, e.Key, e.Index, prev)
			}
			if _, dup := seen[id]; dup {
				v.addf("%s: event %s at index %d delivered twice", name, e.Key, e.Index)
			}
			seen[id] = e
			prev = max(prev, e.Index)
			switch e.Type {
			case "put":
				if st, ok := attempted[kv{e.Key, e.Value}]; !ok || st == history.Fail {
					v.addf("%s: put of %s = %q at index %d, which no write that was not refused made", name, e.Key, e.Value, e.Index)
				}
			case "delete":
				if !deletable[e.Key] && !strings.HasPrefix(e.Key, traffic.KVEphemeralPrefix) {
					v.addf("%s: delete of %s at index %d, which nothing deleted", name, e.Key, e.Index)
				}
			}
		}
		if len(l.Events) == 0 {
			continue
		}
		last := l.Events[len(l.Events)-1].Index
		for _, w := range writes {
			if w.Status != history.OK || w.Index == 0 || w.Index <= l.After || w.Index > last {
				continue
			}
			acked++
			e, ok := seen[fmt.Sprintf("%d %s", w.Index, w.Key)]
			switch {
			case !ok:
				v.addf("%s: the acknowledged write of %s at index %d never arrived (events up to %d)", name, w.Key, w.Index, last)
			case w.Delete != (e.Type == "delete") || !w.Delete && e.Value != w.Value:
				v.addf("%s: the write of %s at index %d arrived as %s %q, not as written", name, w.Key, w.Index, e.Type, e.Value)
			}
		}
	}
	compareSegments(&v, logs)
	v.Cover(acked, "acknowledged writes found in watches", "%d events in %d segments; %d acknowledged writes within their spans", events, len(logs), acked)
	v.undecidedIfNone("no acknowledged write fell within a watch's span")
	return v
}

// compareSegments checks that any two segments delivered the same events
// where their spans overlap.
func compareSegments(v *Verdict, logs []traffic.WatchLog) {
	span := func(l traffic.WatchLog) (uint64, uint64) {
		if len(l.Events) == 0 {
			return l.After, l.After
		}
		return l.After, l.Events[len(l.Events)-1].Index
	}
	within := func(l traffic.WatchLog, lo, hi uint64) []string {
		var out []string
		for _, e := range l.Events {
			if e.Index > lo && e.Index <= hi {
				out = append(out, fmt.Sprintf("%d %s %s %q", e.Index, e.Type, e.Key, e.Value))
			}
		}
		slices.Sort(out)
		return out
	}
	for i := range logs {
		for j := i + 1; j < len(logs); j++ {
			a0, a1 := span(logs[i])
			b0, b1 := span(logs[j])
			lo, hi := max(a0, b0), min(a1, b1)
			if lo >= hi {
				continue
			}
			x, y := within(logs[i], lo, hi), within(logs[j], lo, hi)
			if !slices.Equal(x, y) {
				v.addf("watcher %d segment %d and watcher %d segment %d disagree on indexes %d to %d: %d events against %d (first difference %s)",
					logs[i].Watcher, logs[i].Segment, logs[j].Watcher, logs[j].Segment, lo+1, hi, len(x), len(y), firstDifference(x, y))
			}
		}
	}
}

func firstDifference(x, y []string) string {
	for i := range min(len(x), len(y)) {
		if x[i] != y[i] {
			return x[i] + " / " + y[i]
		}
	}
	if len(x) > len(y) {
		return x[len(y)] + " / none"
	}
	if len(y) > len(x) {
		return "none / " + y[len(x)]
	}
	return "none"
}

// CheckEphemeral checks that no read of the ephemeral prefix invoked after
// a session's end was known to be committed (its destroy acknowledged, or
// a read that showed it gone) lists a key of that session.
func CheckEphemeral(sessions []traffic.EphemeralSession, reads []traffic.EphemeralRead) Verdict {
	v := Verdict{Checker: Ephemeral}
	checked := 0
	for _, s := range sessions {
		if s.Ended == 0 || len(s.Keys) == 0 {
			continue
		}
		for _, r := range reads {
			if r.Call <= s.Ended {
				continue
			}
			checked++
			for _, k := range r.Keys {
				if slices.Contains(s.Keys, k) {
					v.addf("ephemeral key %s listed by a read invoked at %s, after its session's end (%s) was committed by %s",
						k, history.Seconds(r.Call), s.How, history.Seconds(s.Ended))
				}
			}
		}
	}
	ended := 0
	for _, s := range sessions {
		if s.Ended != 0 && len(s.Keys) > 0 {
			ended++
		}
	}
	v.Cover(checked, "reads after a session's end", "%d reads after the end of %d sessions with ephemeral keys (of %d sessions)", checked, ended, len(sessions))
	v.undecidedIfNone("no read of ephemeral keys after a session's end")
	return v
}

// CheckFencedWrites checks the writes guarded by a token of KVFenceLock:
// none accepted that was sent after its holder's release was acknowledged,
// none accepted whose token is lower than that of a grant acknowledged
// before the write was sent, and the accepted writes' tokens never go
// down in the order the store applied them (their indexes).
func CheckFencedWrites(grants []traffic.KVGrant, writes []traffic.FencedKVWrite) Verdict {
	v := Verdict{Checker: FencedWrites}
	late, after := 0, 0
	for _, w := range writes {
		if w.Released != 0 {
			late++
			if w.Status == history.OK {
				v.addf("a write guarded by token %d, sent at %s after its holder's release was acknowledged at %s, was accepted at index %d",
					w.Token, history.Seconds(w.Call), history.Seconds(w.Released), w.Index)
			}
		}
		for _, g := range grants {
			if g.Token > w.Token && g.Return < w.Call {
				after++
				if w.Status == history.OK {
					v.addf("a write guarded by token %d, sent at %s, was accepted at index %d although token %d was granted by %s",
						w.Token, history.Seconds(w.Call), w.Index, g.Token, history.Seconds(g.Return))
				}
				break
			}
		}
	}
	var accepted []traffic.FencedKVWrite
	for _, w := range writes {
		if w.Status == history.OK && w.Index != 0 {
			accepted = append(accepted, w)
		}
	}
	slices.SortFunc(accepted, func(a, b traffic.FencedKVWrite) int { return cmp.Compare(a.Index, b.Index) })
	for i := 1; i < len(accepted); i++ {
		if accepted[i].Token < accepted[i-1].Token {
			v.addf("the write at index %d was accepted with token %d after the one at index %d with token %d",
				accepted[i].Index, accepted[i].Token, accepted[i-1].Index, accepted[i-1].Token)
		}
	}
	v.Cover(late+after, "writes with an old token", "%d writes sent after their release, %d after a newer grant, %d accepted writes in index order",
		late, after, len(accepted))
	v.undecidedIfNone("no write was sent with a token its holder had given up")
	return v
}
