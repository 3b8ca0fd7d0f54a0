// Package docs checks the repository's Markdown: every link that is not a
// web address points at a file or directory inside the repository that
// exists, and at a heading that exists when it names one, so the docs a
// user clones never send them somewhere the repository does not have; and
// every Go test README.md and docs/*.md cite as a claim's guard exists.
package docs

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	// inlineLink matches [text](target) and ![alt](target); the target
	// stops at a space (a title follows) or the closing parenthesis, and
	// may be written <target>.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?[^)]*\)`)
	// refDef matches a reference definition: [label]: target.
	refDef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// htmlLink matches the href or src of an HTML tag.
	htmlLink = regexp.MustCompile(`(?i)\b(?:href|src)\s*=\s*"([^"]*)"`)
	// htmlAnchor matches an explicit anchor: <a name="x"> or id="x".
	htmlAnchor = regexp.MustCompile(`(?i)\b(?:name|id)\s*=\s*"([^"]+)"`)
	// codeSpan matches an inline code span, whose text is not a link.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// scheme matches the scheme of an absolute URL ("https:", "file:").
	scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	// heading matches an ATX heading.
	heading = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
)

// webSchemes are the schemes a link may use to leave the repository: they
// name places on the web, not on the machine the docs were written on.
var webSchemes = map[string]bool{"http": true, "https": true, "mailto": true}

// problem is one bad link.
type problem struct {
	line int
	msg  string
}

// lines returns the lines of a Markdown file that are outside fenced code
// blocks, with inline code spans blanked, numbered from 1.
func lines(text string) map[int]string {
	out := map[int]string{}
	fence := ""
	for n, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
			continue
		case fence != "" && strings.HasPrefix(t, fence):
			fence = ""
			continue
		case fence != "":
			continue
		}
		out[n+1] = codeSpan.ReplaceAllString(line, "")
	}
	return out
}

// slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped (but '-' and '_'), spaces as '-'. Link syntax in the heading
// counts by its text.
func slug(h string) string {
	h = inlineLink.ReplaceAllStringFunc(h, func(m string) string {
		return m[strings.Index(m, "[")+1 : strings.Index(m, "]")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown file: its headings' slugs
// (a repeated one gets -1, -2, ... as on GitHub) and explicit HTML anchors.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
			continue
		case fence != "" && strings.HasPrefix(t, fence):
			fence = ""
			continue
		case fence != "":
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[1])
			if n := seen[s]; n > 0 {
				out[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// checkFile returns the bad links of the Markdown file path in the
// repository rooted at root (both absolute and clean).
func checkFile(root, path string) ([]problem, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	text := string(b)
	var probs []problem
	bad := func(n int, format string, args ...any) {
		probs = append(probs, problem{n, fmt.Sprintf(format, args...)})
	}
	for n, line := range lines(text) {
		var targets []string
		for _, re := range []*regexp.Regexp{inlineLink, refDef, htmlLink} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
		}
		for _, target := range targets {
			if s := scheme.FindString(target); s != "" {
				if !webSchemes[strings.ToLower(strings.TrimSuffix(s, ":"))] {
					bad(n, "link %q leaves the repository (a %s link names a place on one machine)", target, s)
				}
				continue
			}
			p, frag, _ := strings.Cut(target, "#")
			if p == "" {
				if !anchors(text)[frag] {
					bad(n, "link %q names no heading of this file", target)
				}
				continue
			}
			if u, err := url.PathUnescape(p); err == nil {
				p = u
			}
			if strings.HasPrefix(p, "/") || filepath.IsAbs(p) {
				bad(n, "link %q is absolute; link within the repository relatively", target)
				continue
			}
			dest := filepath.Join(filepath.Dir(path), p)
			if rel, err := filepath.Rel(root, dest); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				bad(n, "link %q leaves the repository", target)
				continue
			}
			if _, err := os.Stat(dest); err != nil {
				bad(n, "link %q points at nothing", target)
				continue
			}
			if resolved, err := filepath.EvalSymlinks(dest); err == nil {
				if rel, err := filepath.Rel(realRoot, resolved); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					bad(n, "link %q leaves the repository through a symbolic link", target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(dest, ".md") {
				other, err := os.ReadFile(dest)
				if err != nil {
					return nil, err
				}
				if !anchors(string(other))[frag] {
					bad(n, "link %q names no heading of %s", target, p)
				}
			}
		}
	}
	return probs, nil
}

// markdownFiles lists the Markdown files under root, skipping hidden
// directories, test data, benchmark output and the documents of vendored
// libraries (third_party/*, whose own links are theirs), but not lockd's
// note on each of them (README.lockd.md).
func markdownFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata" || d.Name() == "bench-out") {
			return filepath.SkipDir
		}
		if rel, _ := filepath.Rel(root, path); strings.HasPrefix(rel, "third_party"+string(filepath.Separator)) && d.Name() != "README.lockd.md" {
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			out = append(out, path)
		}
		return nil
	})
	return out, err
}

func TestMarkdownRelativeLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := markdownFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found %d Markdown files under %s: the walk is broken", len(files), root)
	}
	links := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range lines(string(b)) {
			links += len(inlineLink.FindAllString(line, -1))
		}
		probs, err := checkFile(root, f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, p := range probs {
			t.Errorf("%s:%d: %s", rel, p.line, p.msg)
		}
	}
	if links == 0 {
		t.Fatal("no link found: the scan is broken")
	}
}

// TestCheckFile_Cases runs the checker on a repository made for the test,
// beside a directory outside it whose files exist: a link that leaves the
// repository must fail even when its target is there.
func TestCheckFile_Cases(t *testing.T) {
	top := t.TempDir()
	root := filepath.Join(top, "repo")
	for _, dir := range []string{filepath.Join(root, "docs"), filepath.Join(top, "shared")} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(top, "shared", "x.md"), "# X\n")
	write(filepath.Join(root, "docs", "api.md"), "# API\n\n## Errors\n\n## Backup: `GET /v1/snapshot`\n\n## Errors\n\n<a name=\"legacy\"></a>\n")
	if err := os.Symlink(filepath.Join(top, "shared"), filepath.Join(root, "outside")); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(top, "shared", "x.md")

	cases := []struct {
		name, line string
		bad        bool
	}{
		{"relative file", "[api](docs/api.md)", false},
		{"relative directory", "[docs](docs)", false},
		{"heading of another file", "[e](docs/api.md#errors)", false},
		{"heading with code and punctuation", "[b](docs/api.md#backup-get-v1snapshot)", false},
		{"repeated heading", "[e](docs/api.md#errors-1)", false},
		{"html anchor", "[l](docs/api.md#legacy)", false},
		{"heading of this file", "[t](#title)", false},
		{"web link", "[w](https://example.com/x.md)", false},
		{"mail", "[m](mailto:a@example.com)", false},
		{"image", "![i](docs/api.md)", false},
		{"in a code span", "`[x](../shared/x.md)`", false},
		{"out of the repository, target exists", "[x](../shared/x.md)", true},
		{"out through a deeper path", "[x](docs/../../shared/x.md)", true},
		{"absolute path, target exists", "[x](" + abs + ")", true},
		{"file URL", "[x](file://" + abs + ")", true},
		{"symbolic link out", "[x](outside/x.md)", true},
		{"reference definition out", "[x]: ../shared/x.md", true},
		{"html href out", `<a href="../shared/x.md">x</a>`, true},
		{"broken relative", "[x](docs/nothing.md)", true},
		{"broken heading of another file", "[x](docs/api.md#nothing)", true},
		{"broken heading of this file", "[x](#nothing)", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(root, "README.md")
			write(path, "# Title\n\n"+c.line+"\n")
			probs, err := checkFile(root, path)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(probs) > 0; got != c.bad {
				t.Errorf("%s: problems %v, want bad=%v", c.line, probs, c.bad)
			}
		})
	}

	t.Run("fenced code", func(t *testing.T) {
		path := filepath.Join(root, "README.md")
		write(path, "# Title\n\n```sh\n[x](../shared/x.md)\n```\n~~~\n[y](/work/y.md)\n~~~\n")
		probs, err := checkFile(root, path)
		if err != nil {
			t.Fatal(err)
		}
		if len(probs) != 0 {
			t.Errorf("links in fenced code were checked: %v", probs)
		}
	})
}
