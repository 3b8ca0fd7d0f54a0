package api

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

func TestPageQuery(t *testing.T) {
	for _, tt := range []struct {
		after string
		limit int
		want  string
	}{
		{"", 10, "?limit=10"},
		{"jobs/a b", 1, "?after=jobs%2Fa+b&limit=1"},
	} {
		if got := PageQuery(tt.after, tt.limit); got != tt.want {
			t.Errorf("PageQuery(%q, %d) = %q, want %q", tt.after, tt.limit, got, tt.want)
		}
	}
}

func TestAllPages(t *testing.T) {
	pages := map[string][]string{"": {"a", "b"}, "b": {"c"}, "c": {}}
	next := map[string]string{"": "b", "b": "c", "c": ""}
	var asked []string
	got, err := AllPages(func(after string) ([]string, string, error) {
		asked = append(asked, after)
		return pages[after], next[after], nil
	})
	if err != nil || strings.Join(got, ",") != "a,b,c" || strings.Join(asked, ",") != ",b,c" {
		t.Fatalf("AllPages = %v %v after asking %q", got, err, asked)
	}
	// An empty list is empty, not nil (it encodes as []).
	if got, err := AllPages(func(string) ([]int, string, error) { return nil, "", nil }); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("empty list: %#v %v", got, err)
	}
	// A cursor that does not move forward ends the walk with an error.
	calls := 0
	_, err = AllPages(func(after string) ([]int, string, error) {
		calls++
		return []int{1}, "x", nil
	})
	if err == nil || !strings.Contains(err.Error(), "does not follow") || calls != 2 {
		t.Fatalf("stuck cursor: %v after %d pages", err, calls)
	}
	// An error from a page is returned as is.
	boom := errors.New("boom")
	if _, err := AllPages(func(string) ([]int, string, error) { return nil, "", boom }); !errors.Is(err, boom) {
		t.Fatalf("page error: %v", err)
	}
}
