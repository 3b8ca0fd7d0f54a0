package system

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/lockd/lockd/test/proccluster"
)

// TestDefaultBuild_HasNoUnsafeSwitches builds lockd as make build does
// (no build tag) and shows that it cannot be started with a guarantee off:
// "lockd serve --help" mentions no unsafe flag, the flags are refused, and
// the binary's bytes hold none of the switch names. The names are those
// the tagged build (mustBuild's) lists when refusing an unknown switch, so
// a switch added later is checked too.
func TestDefaultBuild_HasNoUnsafeSwitches(t *testing.T) {
	tagged := mustBuild(t)
	out, _ := exec.Command(tagged, "serve", "--unsafe-debug", "no-such-switch").CombinedOutput()
	m := regexp.MustCompile(`\(known: ([a-z, -]+)\)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the tagged build did not list its switches:\n%s", out)
	}
	names := append(strings.Split(string(m[1]), ", "), "unsafe-debug", "unsafe-fault-injection")
	if len(names) < 20 {
		t.Fatalf("only %d names: %q", len(names), names)
	}

	bin, err := proccluster.BuildTags(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	help, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
	if !strings.Contains(string(help), "-heartbeat-timeout") {
		t.Fatalf("lockd serve --help printed no flags:\n%s", help)
	}
	if strings.Contains(strings.ToLower(string(help)), "unsafe") {
		t.Errorf("lockd serve --help of the default build mentions an unsafe flag:\n%s", help)
	}
	for _, flag := range []string{"--unsafe-debug=grant-held", "--unsafe-fault-injection"} {
		cmd := exec.Command(bin, "serve", flag, "--data", t.TempDir())
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "flag provided but not defined") {
			t.Errorf("lockd serve %s: %v\n%s", flag, err, out)
		}
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if bytes.Contains(data, []byte(name)) {
			t.Errorf("the default build's binary holds %q", name)
		}
	}
}
