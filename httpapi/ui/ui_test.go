package ui

import (
	"regexp"
	"strings"
	"testing"
)

// The page loads nothing from elsewhere and has no inline code, which the
// Content-Security-Policy would block: every script and style is a file of
// its own, every handler attached from app.js.
func TestFiles_SelfContained(t *testing.T) {
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for name, f := range files {
		body := string(f.body)
		if name == "favicon.svg" {
			body = strings.Replace(body, `xmlns="http://www.w3.org/2000/svg"`, "", 1)
		}
		if m := external.FindString(body); m != "" {
			t.Errorf("%s refers to %q: the page must load nothing from another origin", name, m)
		}
	}
	page := string(files["index.html"].body)
	for _, re := range []string{`<script(\s[^>]*)?>\s*[^<\s]`, `<style`, `\sstyle=`, `\son[a-z]+=`, `javascript:`} {
		if m := regexp.MustCompile(re).FindString(page); m != "" {
			t.Errorf("index.html has inline code %q, which the Content-Security-Policy forbids", m)
		}
	}
	if !strings.Contains(page, `name="viewport"`) {
		t.Error("index.html has no viewport meta: phones would show it zoomed out")
	}
	if files[""].etag != files["index.html"].etag {
		t.Error("/ui/ does not serve index.html")
	}
}
