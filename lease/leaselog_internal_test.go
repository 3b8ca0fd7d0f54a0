package lease

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A lease round that was under way when the node stopped serving in its
// term may still end in an extension; the lease log must not say the node
// serves again.
func TestLeaseLog_NoLeaseAfterStopInTheSameTerm(t *testing.T) {
	term, _ := newTestTerm(SystemClock{})
	path := filepath.Join(t.TempDir(), "n1.lease")
	l, err := openLeaseLog(path, "n1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	term.n.leaseLog = l
	lines := func() []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	term.finishRound(time.Now().Add(400*time.Millisecond), nil, nil)
	term.logStop()
	term.finishRound(time.Now().Add(800*time.Millisecond), nil, nil)
	got := lines()
	if len(got) != 2 {
		t.Fatalf("lease log after a lease, a stop and a late extension:\n%s\nwant the lease and the stop only", strings.Join(got, "\n"))
	}
	var id string
	var tm uint64
	var from, until int64
	for i, ln := range got {
		if _, err := fmt.Sscan(ln, &id, &tm, &from, &until); err != nil {
			t.Fatalf("line %q: %v", ln, err)
		}
		if i == 0 && time.Duration(until-from) < 300*time.Millisecond {
			t.Errorf("lease line %q: until - from = %v, want about 400ms", ln, time.Duration(until-from))
		}
		if i == 1 && until != from {
			t.Errorf("stop line %q: until != from", ln)
		}
	}
}
