package validate

import (
	"sort"
	"strings"
)

// Sample is one node's answer to GET /v1/cluster in one poll round.
type Sample struct {
	Round int
	At    int64
	Node  string
	State string
	Term  uint64
	// Return is when the answer came (0: unknown), Proc the node's process
	// that gave it (0: unknown), Leader the leader the node knew of ("" for
	// none) and Applied its applied index: the stale-reads checker's
	// evidence of what the node had applied, and of whether it followed a
	// leader.
	Return  int64  `json:",omitempty"`
	Proc    int    `json:",omitempty"`
	Leader  string `json:",omitempty"`
	Applied uint64 `json:",omitempty"`
}

// CheckLeaders checks that no two nodes ever said they were leader in the
// same term. With classic set (the ring, bully and invitation modes, which
// have no terms), it instead counts poll rounds in which more than one
// node called itself coordinator.
func CheckLeaders(samples []Sample, classic bool) Verdict {
	v := Verdict{Checker: Leaders}
	if classic {
		rounds := map[int][]string{}
		for _, s := range samples {
			if isLeaderState(s.State) {
				rounds[s.Round] = append(rounds[s.Round], s.Node)
			}
		}
		var keys []int
		for r, ns := range rounds {
			if len(ns) > 1 {
				keys = append(keys, r)
			}
		}
		sort.Ints(keys)
		for _, r := range keys {
			v.addf("poll round %d: %d simultaneous coordinators %s", r, len(rounds[r]), strings.Join(rounds[r], ","))
		}
		v.Cover(len(rounds), "poll rounds", "%d poll rounds with a coordinator (%d samples)", len(rounds), len(samples))
		v.undecidedIfNone("no poll saw a coordinator")
		return v
	}
	byTerm := map[uint64]map[string]bool{}
	for _, s := range samples {
		if !isLeaderState(s.State) {
			continue
		}
		if byTerm[s.Term] == nil {
			byTerm[s.Term] = map[string]bool{}
		}
		byTerm[s.Term][s.Node] = true
	}
	for term, ns := range byTerm {
		if len(ns) > 1 {
			var ids []string
			for n := range ns {
				ids = append(ids, n)
			}
			sort.Strings(ids)
			v.addf("term %d had %d leaders: %s", term, len(ns), strings.Join(ids, ","))
		}
	}
	v.Cover(len(byTerm), "terms", "%d terms with a leader in %d samples", len(byTerm), len(samples))
	v.undecidedIfNone("no poll saw a leader")
	return v
}

func isLeaderState(s string) bool {
	s = strings.ToLower(s)
	return s == "leader" || s == "coordinator"
}
