package api

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest lock or election name, in bytes.
const MaxNameLen = 256

// LockVerbs and ElectionVerbs are the final path segments of the POST
// routes on one lock or election (POST /v1/locks/{name}/acquire, ...). A
// name of two or more segments whose last one is a verb of its kind would
// make GET /v1/locks/{name} read as a misdirected acquire, so no new lock
// or election may be named so (see VerbSuffix).
var (
	LockVerbs     = []string{"acquire", "release", "check"}
	ElectionVerbs = []string{"campaign", "proclaim", "resign"}
)

// ValidateName checks a lock or election name: 1..256 bytes of
// [A-Za-z0-9._/-], made of '/'-separated segments none of which is empty,
// "." or "..". The error says what is wrong with it.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("name is empty")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("name is %d bytes long; the limit is %d", len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '/' || c == '-'
		if !ok {
			return badCharacter(name, i)
		}
	}
	for _, seg := range strings.Split(name, "/") {
		switch seg {
		case "":
			return fmt.Errorf("name %q has an empty segment", name)
		case ".", "..":
			return fmt.Errorf("name %q has a %q segment", name, seg)
		}
	}
	return nil
}

// badCharacter describes the disallowed character that starts at byte i
// of name: the whole character when it is UTF-8 ('ö', not the first of
// its bytes), the byte when it is not.
func badCharacter(name string, i int) error {
	r, size := utf8.DecodeRuneInString(name[i:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Errorf("name %q has the byte 0x%02x at byte %d, which is not UTF-8; allowed are A-Z a-z 0-9 . _ / -", name, name[i], i)
	}
	return fmt.Errorf("name %q has the character %q at byte %d; allowed are A-Z a-z 0-9 . _ / -", name, r, i)
}

// VerbSuffix returns the verb of verbs (LockVerbs or ElectionVerbs) that
// name ends in as its last segment after a '/' ("jobs/acquire" ends in
// "acquire"), or "". A name that is only a verb ("acquire") has none: its
// paths are not ambiguous.
func VerbSuffix(name string, verbs []string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	for _, v := range verbs {
		if name[i+1:] == v {
			return v
		}
	}
	return ""
}

// ReadPathName returns name as it goes in the path of a GET of one lock
// (verbs LockVerbs) or election (ElectionVerbs): name itself, or, for a
// name that ends in a verb, which only a version before the verbs were
// reserved could create, with its last '/' written %2F, so that the
// server reads it rather than taking the path for a misdirected POST.
func ReadPathName(name string, verbs []string) string {
	if VerbSuffix(name, verbs) == "" {
		return name
	}
	i := strings.LastIndexByte(name, '/')
	return name[:i] + "%2F" + name[i+1:]
}
