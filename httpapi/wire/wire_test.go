package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"jobs/nightly", true},
		{"A-Z_0.9/x-y", true},
		{strings.Repeat("a", MaxNameLen), true},
		{"", false},
		{strings.Repeat("a", MaxNameLen+1), false},
		{"a//b", false},
		{"/a", false},
		{"a/", false},
		{"a/./b", false},
		{"a/../b", false},
		{"..", false},
		{"a b", false},
		{"a?b", false},
		{"ü", false},
	}
	for _, tt := range tests {
		if err := ValidateName(tt.name); (err == nil) != tt.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestDuration_JSON(t *testing.T) {
	var d Duration
	if err := json.Unmarshal([]byte(`"1m30s"`), &d); err != nil || d.D() != 90*time.Second {
		t.Fatalf("unmarshal 1m30s = %v, %v", d, err)
	}
	for _, bad := range []string{`15`, `"15"`, `"5x"`, `true`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("unmarshal %s accepted", bad)
		}
	}
	b, _ := json.Marshal(Duration(250 * time.Millisecond))
	if string(b) != `"250ms"` {
		t.Fatalf("marshal = %s", b)
	}
}

func TestError_IsByCode(t *testing.T) {
	err := error(Errorf(CodeLockHeld, "lock %q is held", "a"))
	if !errors.Is(err, &Error{Code: CodeLockHeld}) {
		t.Fatal("errors.Is by code failed")
	}
	if errors.Is(err, &Error{Code: CodeNotHolder}) {
		t.Fatal("errors.Is matched another code")
	}
	if CodeOf(err) != CodeLockHeld || CodeOf(errors.New("x")) != "" {
		t.Fatal("CodeOf")
	}
}
