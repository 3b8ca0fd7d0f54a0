package failpoint

import "testing"

// wrapped is a fault wrapper as the runner's: it names what it wraps.
type wrapped struct{ Failpoint }

func (w wrapped) Unwrap() Failpoint { return w.Failpoint }

// TestAimOf_LooksThroughWrappers: an aimed fault is found through a
// wrapper, a plain one is not aimed, wrapped or not.
func TestAimOf_LooksThroughWrappers(t *testing.T) {
	aimed, plain := Failpoint(&lateAnswer{}), Failpoint(&pauseClient{})
	if _, ok := AimOf(wrapped{wrapped{aimed}}); !ok {
		t.Error("an aimed fault inside two wrappers is not found")
	}
	if _, ok := AimOf(wrapped{plain}); ok {
		t.Error("a plain fault inside a wrapper reads as aimed")
	}
	if _, ok := AimOf(plain); ok {
		t.Error("a plain fault reads as aimed")
	}
}
