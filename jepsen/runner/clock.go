package runner

import (
	"strconv"
	"strings"
)

// maxClockDrift is the drift bound the nodes run with, as failpoint.Env
// wants it: the value of --max-clock-drift in args, 0 for lockd's default
// when absent, and -1 for an explicit 0.
func maxClockDrift(args []string) float64 {
	d := 0.0
	for i, a := range args {
		a = "-" + strings.TrimLeft(a, "-")
		v, ok := strings.CutPrefix(a, "-max-clock-drift=")
		if !ok && a == "-max-clock-drift" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if x, err := strconv.ParseFloat(v, 64); ok && err == nil {
			d = x
			if x == 0 {
				d = -1
			}
		}
	}
	return d
}
