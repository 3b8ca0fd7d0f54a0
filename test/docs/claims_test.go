package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// citedTest matches a Go test named in code: TestX, TestX/sub (a subtest,
// of which only TestX is checked) or TestX_* (every test whose name begins
// TestX_). The name must not continue a longer word.
var citedTest = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])(Test[A-Z][A-Za-z0-9_]*)(\*)?`)

// citation is one Go test a Markdown file names.
type citation struct {
	line   int
	name   string
	prefix bool // written TestX_*: some test's name must begin with name
}

// citations returns the Go tests that a Markdown text names in code: in
// inline code spans (which may wrap across the lines of a paragraph) and in
// fenced code blocks (go test -run TestX). Prose is not read: a test is
// cited by its name in backticks.
func citations(text string) []citation {
	var out []citation
	add := func(code string, line int) {
		for _, m := range citedTest.FindAllStringSubmatchIndex(code, -1) {
			n := line + strings.Count(code[:m[2]], "\n")
			out = append(out, citation{n, code[m[2]:m[3]], m[4] >= 0})
		}
	}
	var para []string // the current paragraph outside fences
	paraStart := 0    // its first line, numbered from 1
	flush := func() {
		block := strings.Join(para, "\n")
		for _, loc := range codeSpan.FindAllStringIndex(block, -1) {
			add(block[loc[0]:loc[1]], paraStart+strings.Count(block[:loc[0]], "\n"))
		}
		para = nil
	}
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			flush()
			fence = t[:3]
		case fence != "" && strings.HasPrefix(t, fence):
			fence = ""
		case fence != "":
			add(line, i+1)
		case t == "":
			flush()
		default:
			if para == nil {
				paraStart = i + 1
			}
			para = append(para, line)
		}
	}
	flush()
	return out
}

// goTests returns the names of the test functions (func TestX(...), no
// receiver) declared in the *_test.go files under root, nested modules
// such as bench/compare included; it skips hidden directories, vendor and
// testdata, which go test does not build. It also returns the directories
// of the go.mod files it passed, so a caller can see the walk reached them.
func goTests(root string) (map[string]bool, []string, error) {
	tests := map[string]bool{}
	var modules []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "vendor" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "go.mod" {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			modules = append(modules, filepath.ToSlash(rel))
		}
		if !strings.HasSuffix(d.Name(), "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				tests[fn.Name.Name] = true
			}
		}
		return nil
	})
	return tests, modules, err
}

// in reports whether the citation c names a test of tests.
func (c citation) in(tests map[string]bool) bool {
	if !c.prefix {
		return tests[c.name]
	}
	for name := range tests {
		if strings.HasPrefix(name, c.name) {
			return true
		}
	}
	return false
}

// claimDocs are the documents whose claims name the tests that guard them.
func claimDocs(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	return append([]string{filepath.Join(root, "README.md")}, docs...), nil
}

// TestDocs_CitedTestsExist fails when README.md or docs/*.md names a Go
// test that no *_test.go file of the repository declares: a claim that
// names the test guarding it must name one that runs.
func TestDocs_CitedTestsExist(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tests, modules, err := goTests(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 100 {
		t.Fatalf("found %d tests under %s: the walk is broken", len(tests), root)
	}
	sort.Strings(modules)
	if len(modules) < 2 || modules[0] != "." {
		t.Fatalf("go.mod files found in %v: the walk missed the nested modules (bench/compare)", modules)
	}
	files, err := claimDocs(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, c := range citations(string(b)) {
			n++
			if !c.in(tests) {
				what := "no *_test.go file declares func " + c.name + "("
				if c.prefix {
					what = "no test's name begins " + c.name
				}
				t.Errorf("%s:%d: cites %s, but %s", filepath.ToSlash(rel), c.line, c.name, what)
			}
		}
	}
	if n < 20 {
		t.Fatalf("found %d cited tests in %d documents: the scan is broken", n, len(files))
	}
}

// TestCitations_Cases checks what counts as a citation and what counts as
// a test, on texts and a repository made for the test.
func TestCitations_Cases(t *testing.T) {
	cases := []struct {
		name, text string
		want       []citation
	}{
		{"code span", "Guarded (`TestA_B`).", []citation{{1, "TestA_B", false}}},
		{"subtest", "See `TestA/case one`.", []citation{{1, "TestA", false}}},
		{"prefix", "Every metric (`TestMetrics_*`).", []citation{{1, "TestMetrics_", true}}},
		{"in a command", "Run `go test -run 'TestA|TestB' ./x`.", []citation{{1, "TestA", false}, {1, "TestB", false}}},
		{"span wrapped across lines", "x\nthe test `go test -run\nTestC` y", []citation{{3, "TestC", false}}},
		{"fenced", "# T\n\n```sh\ngo test -run TestD ./x\n```\n", []citation{{4, "TestD", false}}},
		{"prose is not read", "TestE is not in backticks.", nil},
		{"part of a longer word", "`MyTestF` and `httptest.NewServer`", nil},
		{"not a test name", "`Testing` and `TestaB`", nil},
		{"line numbers after a fence", "```\nx\n```\n\na `TestG`", []citation{{5, "TestG", false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := citations(c.text)
			if len(got) != len(c.want) {
				t.Fatalf("citations(%q) = %v, want %v", c.text, got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("citations(%q) = %v, want %v", c.text, got, c.want)
				}
			}
		})
	}

	t.Run("tests of the repository", func(t *testing.T) {
		root := t.TempDir()
		write := func(rel, text string) {
			t.Helper()
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write("go.mod", "module x\n")
		write("a/a_test.go", "package a\n\nimport \"testing\"\n\nfunc TestReal(t *testing.T) {}\n\ntype s struct{}\n\nfunc (s) TestMethod(t *testing.T) {}\n\n// func TestCommented(t *testing.T) {}\n\nvar src = `func TestInAString(t *testing.T) {}`\n")
		write("a/a.go", "package a\n\nfunc TestNotInATestFile() {}\n")
		write("bench/compare/go.mod", "module y\n")
		write("bench/compare/b_test.go", "package compare\n\nimport \"testing\"\n\nfunc TestNested(t *testing.T) {}\n")
		write("a/testdata/t_test.go", "package t\n\nfunc TestTestdata(t *testing.T) {}\n")
		write("vendor/v/v_test.go", "package v\n\nfunc TestVendored(t *testing.T) {}\n")
		write(".git/g_test.go", "package g\n\nfunc TestHidden(t *testing.T) {}\n")
		tests, modules, err := goTests(root)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{"TestReal": true, "TestNested": true}
		if len(tests) != len(want) {
			t.Errorf("tests %v, want %v", tests, want)
		}
		for name := range want {
			if !tests[name] {
				t.Errorf("tests %v, want %v", tests, want)
			}
		}
		sort.Strings(modules)
		if strings.Join(modules, " ") != ". bench/compare" {
			t.Errorf("modules %v, want [. bench/compare]", modules)
		}
		for _, c := range []struct {
			c    citation
			want bool
		}{
			{citation{1, "TestReal", false}, true},
			{citation{1, "TestNested", false}, true},
			{citation{1, "TestRe", false}, false},
			{citation{1, "TestRe", true}, true},
			{citation{1, "TestMethod", false}, false},
			{citation{1, "TestCommented", false}, false},
			{citation{1, "TestInAString", false}, false},
			{citation{1, "TestNotInATestFile", false}, false},
			{citation{1, "TestTestdata", false}, false},
			{citation{1, "TestVendored", false}, false},
		} {
			if got := c.c.in(tests); got != c.want {
				t.Errorf("%+v found %v, want %v", c.c, got, c.want)
			}
		}
	})
}
