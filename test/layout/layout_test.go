// Package layout holds the rules of lockd's package layout as tests, so
// that they stay true: which package may import which (docs/design.md,
// "The pieces").
package layout

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/lockd/lockd"

// pkg is what go list says of one package of the module: its own imports
// (not its tests') and everything they pull in.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// rel is p without the module's prefix ("lease", "internal/mux"), or ""
// for a package outside the module.
func rel(p string) string {
	if p == module {
		return "."
	}
	if r, ok := strings.CutPrefix(p, module+"/"); ok {
		return r
	}
	return ""
}

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	statSources(t)
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[rel(p.ImportPath)] = p
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: the listing is broken", len(pkgs))
	}
	return pkgs
}

// statSources looks at every Go file of the module, so that go test's
// cache, which notes the files a test looks at but not what a command it
// runs reads, runs these tests again whenever an import may have changed.
func statSources(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".go") || d.Name() == "go.mod") {
			_, err = os.Stat(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// room is the top-level room of a package: its first path element, or
// the first two for cmd/ and internal/ ("cmd/lockd", "internal/mux").
func room(r string) string {
	parts := strings.Split(r, "/")
	if (parts[0] == "cmd" || parts[0] == "internal") && len(parts) > 1 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

// floors orders the rooms from the ground up. A package may import a
// package of its own room, or of a room on a lower floor; never one on
// its own floor in another room, or one above. The tools stand above the
// product (nothing of the product stands on them): the test helpers, then
// the benchmarks and the fault harness that use them, then the benchmarks'
// command and the scripts.
var floors = [][]string{
	{"acl"},
	{"api", "internal/backup", "internal/certs", "internal/clientrate", "internal/connlimit", "internal/ctxsleep", "internal/logthrottle", "internal/mux", "internal/peerhttp", "internal/cli"},
	{"fsm", "classic"},
	{"lease", "httpapi", "etcdapi", "client"},
	{"server"},
	{"cmd/lockd", "examples"},
	{"test"},
	{"bench", "jepsen"},
	{"cmd/lockd-bench", "scripts"},
}

func floorOf(t *testing.T, r string) int {
	for i, f := range floors {
		if slices.Contains(f, room(r)) {
			return i
		}
	}
	t.Errorf("package %s is in room %s, which has no floor: add it to floors and to docs/design.md", r, room(r))
	return -1
}

// TestLayout_ImportsRunDownward: every import of the module's own
// packages runs to the importer's room or to a lower floor.
func TestLayout_ImportsRunDownward(t *testing.T) {
	pkgs := listPackages(t)
	internalIn := map[string]bool{}
	for _, r := range floors[1] {
		internalIn[r] = true
	}
	for r, p := range pkgs {
		from := floorOf(t, r)
		for _, imp := range p.Imports {
			ir := rel(imp)
			if ir == "" {
				continue
			}
			to := floorOf(t, ir)
			same := room(ir) == room(r) || internalIn[room(ir)] && internalIn[room(r)] && strings.HasPrefix(r, "internal/")
			if to > from || to == from && !same {
				t.Errorf("%s (floor %d) imports %s (floor %d): imports run down only", r, from, ir, to)
			}
		}
	}
}

// TestLayout_TheRulesOfTheIssue: the few rules a reader relies on most,
// spelled out on the packages' whole dependency sets.
func TestLayout_TheRulesOfTheIssue(t *testing.T) {
	pkgs := listPackages(t)
	deps := func(r string) []string {
		p, ok := pkgs[r]
		if !ok {
			t.Fatalf("no package %s", r)
		}
		return p.Deps
	}
	for _, d := range deps("api") {
		if ir := rel(d); ir != "" && ir != "acl" {
			t.Errorf("api depends on %s: it may use the standard library and acl only", ir)
		}
	}
	for _, r := range []string{"lease", "fsm"} {
		for _, d := range deps(r) {
			ir := rel(d)
			if d == "net/http/httptest" || ir == "httpapi" || strings.HasPrefix(ir, "httpapi/") || ir == "server" ||
				ir == "etcdapi" || strings.HasPrefix(d, "google.golang.org/grpc") || strings.HasPrefix(d, "go.etcd.io/etcd/") {
				t.Errorf("%s depends on %s: the core knows no HTTP or gRPC layer and no assembly", r, d)
			}
		}
	}
	for _, d := range deps("etcdapi") {
		if ir := rel(d); ir == "lease" || ir == "httpapi" || ir == "server" {
			t.Errorf("etcdapi depends on %s: it serves a Backend interface, as httpapi serves its Service", ir)
		}
	}
	// Of etcd, lockd's own packages use the published protobuf types only:
	// go.etcd.io/etcd/api/v3, and of the server module the two packages of
	// the Lock and Election services' types; never its client or the rest
	// of its server, which only the separate module test/etcdcompat brings
	// in.
	etcdTypes := func(d string) bool {
		return strings.HasPrefix(d, "go.etcd.io/etcd/api/v3/") ||
			d == "go.etcd.io/etcd/server/v3/etcdserver/api/v3lock/v3lockpb" ||
			d == "go.etcd.io/etcd/server/v3/etcdserver/api/v3election/v3electionpb"
	}
	for r, p := range pkgs {
		for _, d := range p.Deps {
			if strings.HasPrefix(d, "go.etcd.io/etcd/") && !etcdTypes(d) {
				t.Errorf("%s depends on %s: of etcd only its protobuf types (api/v3, v3lockpb, v3electionpb) may be used", r, d)
			}
		}
	}
	for _, d := range deps("cmd/lockd") {
		ir := rel(d)
		if room(ir) == "bench" || room(ir) == "test" || room(ir) == "jepsen" {
			t.Errorf("cmd/lockd depends on %s: the server binary carries no benchmark, test helper or process supervisor", ir)
		}
	}
	tools := []string{"bench", "cmd/lockd-bench", "test", "jepsen", "scripts"}
	for r, p := range pkgs {
		if slices.Contains(tools, room(r)) {
			continue
		}
		for _, d := range p.Deps {
			if ir := rel(d); room(ir) == "test" {
				t.Errorf("%s (production code) depends on the test helper %s", r, ir)
			}
		}
	}
}
