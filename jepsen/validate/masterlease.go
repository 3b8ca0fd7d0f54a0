package validate

import (
	"bufio"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// LeaseLine is one line of a node's lease log (lockd serve --lease-log):
// from the moment From on, until the node's next line, the node may serve
// under its master lease of Term until the moment Until. Both are
// nanoseconds of the host's CLOCK_MONOTONIC; Until <= From means the node
// does not serve.
type LeaseLine struct {
	Node        string
	Term        uint64
	From, Until int64
}

// ParseLeaseLog reads a lease log. A line that does not parse (the last
// line of a process killed in the middle of writing it) is skipped and
// counted in skipped.
func ParseLeaseLog(r io.Reader) (lines []LeaseLine, skipped int, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l, ok := parseLeaseLine(sc.Text())
		if !ok {
			skipped++
			continue
		}
		lines = append(lines, l)
	}
	return lines, skipped, sc.Err()
}

func parseLeaseLine(s string) (LeaseLine, bool) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return LeaseLine{}, false
	}
	term, err1 := strconv.ParseUint(f[1], 10, 64)
	from, err2 := strconv.ParseInt(f[2], 10, 64)
	until, err3 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || f[0] == "" {
		return LeaseLine{}, false
	}
	return LeaseLine{Node: f[0], Term: term, From: from, Until: until}, true
}

// leaseInterval is a stretch of time in which one node may serve.
type leaseInterval struct {
	node       string
	term       uint64
	start, end int64
}

// servingIntervals turns each node's lines into the intervals in which it
// may serve: a line's lease runs from its From to the earlier of its Until
// and the next line's From (a later line revises or ends it). Intervals of
// one node and term that touch are merged.
func servingIntervals(lines []LeaseLine) []leaseInterval {
	byNode := map[string][]LeaseLine{}
	for _, l := range lines {
		byNode[l.Node] = append(byNode[l.Node], l)
	}
	var out []leaseInterval
	for node, ls := range byNode {
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].From < ls[j].From })
		for i, l := range ls {
			end := l.Until
			if i+1 < len(ls) && ls[i+1].From < end {
				end = ls[i+1].From
			}
			if end <= l.From {
				continue
			}
			// A renewal continues the interval before it: one interval per
			// stretch of service, so that one overlap is one violation.
			if k := len(out) - 1; k >= 0 && out[k].node == node && out[k].term == l.Term && out[k].end >= l.From {
				out[k].end = max(out[k].end, end)
				continue
			}
			out = append(out, leaseInterval{node: node, term: l.Term, start: l.From, end: end})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].start != out[j].start {
			return out[i].start < out[j].start
		}
		return out[i].node < out[j].node
	})
	return out
}

// CheckMasterLease checks lockd's own promise, stronger than Raft's one
// leader per term: no two nodes ever may serve under a master lease at the
// same moment. Its evidence is every node's lease log, which covers
// paused and killed nodes too (their last line stands until their next).
// It also checks, from the same logs, that no two nodes held a lease in
// one term. Lines are per node; skipped is how many lines did not parse.
// The classic election modes promise nothing of the kind: with classic
// set it checks nothing.
func CheckMasterLease(lines []LeaseLine, skipped int, classic bool) Verdict {
	v := Verdict{Checker: MasterLease}
	if classic {
		return v.NotInForce("classic election mode: no quorum-backed master lease to check")
	}
	iv := servingIntervals(lines)
	for i, a := range iv {
		for _, b := range iv[i+1:] {
			if b.start >= a.end {
				break
			}
			if b.node != a.node {
				v.addf("%s (term %d) and %s (term %d) both may serve for %v: %s's lease [%d, %d) overlaps %s's [%d, %d) (ns of CLOCK_MONOTONIC)",
					a.node, a.term, b.node, b.term, time.Duration(min(a.end, b.end)-b.start),
					a.node, a.start, a.end, b.node, b.start, b.end)
			}
		}
	}
	byTerm := map[uint64]map[string]bool{}
	for _, l := range iv {
		if byTerm[l.term] == nil {
			byTerm[l.term] = map[string]bool{}
		}
		byTerm[l.term][l.node] = true
	}
	var terms []uint64
	for t, ns := range byTerm {
		if len(ns) > 1 {
			terms = append(terms, t)
		}
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i] < terms[j] })
	for _, t := range terms {
		var ids []string
		for n := range byTerm[t] {
			ids = append(ids, n)
		}
		sort.Strings(ids)
		v.addf("term %d: %d nodes held a master lease: %s", t, len(ids), strings.Join(ids, ","))
	}
	nodes := map[string]bool{}
	for _, l := range lines {
		nodes[l.Node] = true
	}
	v.Cover(len(iv), "serving intervals", "%d serving intervals in %d terms from %d lease log lines of %d nodes (%d unreadable, skipped)",
		len(iv), len(byTerm), len(lines), len(nodes), skipped)
	if len(lines) == 0 {
		v.Undecided = "no lease log lines: no node ever logged a master lease"
	}
	return v
}
