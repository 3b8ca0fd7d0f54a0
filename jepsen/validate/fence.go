package validate

import (
	"fmt"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// CheckFencing checks the fenced resource's log: no accepted write may
// carry a token lower than a write the resource had accepted before it (a
// stale holder's write landing after a newer holder's). With fencing on,
// the resource refuses such writes; with it off (the negative control),
// a paused holder's late write shows up here.
func CheckFencing(writes []traffic.Write) Verdict {
	v := Verdict{Checker: Fencing}
	var highest uint64
	var by string
	accepted, refused := 0, 0
	for _, w := range writes {
		if !w.Accepted {
			refused++
			continue
		}
		accepted++
		if w.Token < highest {
			v.addf("stale write accepted at %s: %s wrote with token %d after %s had written with %d",
				history.Seconds(w.At), w.Client, w.Token, by, highest)
			continue
		}
		highest, by = w.Token, w.Client
	}
	v.Details = append(v.Details, fmt.Sprintf("%d writes accepted, %d refused as stale", accepted, refused))
	return v
}
