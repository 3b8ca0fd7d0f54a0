package failpoint

import (
	"os"
	"strings"
	"testing"
)

// TestMissingTools checks that the iptables-* faults name what they lack
// (here: the iptables command, hidden by an empty PATH), and that faults
// that need nothing of the host never do.
func TestMissingTools(t *testing.T) {
	none, err := Select("partition-leader,delay-node,late-answer")
	if err != nil {
		t.Fatal(err)
	}
	if err := MissingTools(none); err != nil {
		t.Errorf("faults without iptables: %v", err)
	}
	fs, err := Select("partition-leader,iptables-leader,iptables-oneway")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", "")
	err = MissingTools(fs)
	if err == nil {
		t.Fatal("no error without the iptables command")
	}
	for _, want := range []string{"iptables-leader", "iptables-oneway", "jepsen-deps.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	if os.Geteuid() == 0 && !strings.Contains(err.Error(), "iptables command") {
		t.Errorf("%q does not say the command is missing", err)
	}
}
