package api

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// nameSyntax is the name rule of ValidateName's doc, written as a regular
// expression: segments of the allowed bytes joined by '/'. The "." and ".."
// segments and the length are checked beside it.
var nameSyntax = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)

// FuzzValidateName: ValidateName accepts exactly the names its doc
// describes, and an accepted name travels in a URL path as it is, and in
// JSON unchanged.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{
		"a", "jobs/nightly", "A-Z_0.9/x-y", "..", "a/../b", "a/./b", "a//b", "/a", "a/", "a b",
		"ü", "...", "a/...", ".a/b.", strings.Repeat("a", MaxNameLen), strings.Repeat("a/", 128),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidateName(name)
		want := len(name) <= MaxNameLen && nameSyntax.MatchString(name)
		for seg := range strings.SplitSeq(name, "/") {
			if seg == "." || seg == ".." {
				want = false
			}
		}
		if (err == nil) != want {
			t.Fatalf("ValidateName(%q) = %v, want accepted %v", name, err, want)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ValidateName(%q): an error without a message", name)
			}
			return
		}
		if p := (&url.URL{Path: "/v1/locks/" + name}).EscapedPath(); p != "/v1/locks/"+name {
			t.Fatalf("name %q is escaped in a path: %s", name, p)
		}
		var back string
		if b, err := json.Marshal(name); err != nil || json.Unmarshal(b, &back) != nil || back != name {
			t.Fatalf("name %q does not survive JSON: %s", name, b)
		}
	})
}
