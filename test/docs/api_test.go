package docs

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/httpapi"
)

// apiDoc returns docs/api.md.
func apiDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// parseDir parses the non-test Go files of a package directory.
func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// stringLit returns the value of e if it is a string literal.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// methodOf names the HTTP method an expression of the routing table
// stands for: the short names routes() declares, or http.MethodX.
func methodOf(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return map[string]string{"get": "GET", "post": "POST", "put": "PUT", "del": "DELETE"}[x.Name]
	case *ast.SelectorExpr:
		if m, ok := strings.CutPrefix(x.Sel.Name, "Method"); ok {
			return strings.ToUpper(m)
		}
	}
	return ""
}

// muxVar matches a path variable with a pattern, "{name:.*}", which the
// docs write as "{name}".
var muxVar = regexp.MustCompile(`\{([a-z]+):[^}]*\}`)

// TestAPIDocCoversEveryRoute reads the routing table from httpapi's source
// (every route literal: method and path) and every path registered apart
// from it, and requires docs/api.md to name each one ("GET /v1/locks/{name}"),
// so that a route added without its documentation fails here.
func TestAPIDocCoversEveryRoute(t *testing.T) {
	doc := apiDoc(t)
	var routes, paths []string
	for _, f := range parseDir(t, "../../httpapi") {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CompositeLit:
				var method, path string
				if len(x.Elts) >= 2 {
					if p, ok := stringLit(x.Elts[1]); ok && strings.HasPrefix(p, "/") {
						method, path = methodOf(x.Elts[0]), p
					}
				}
				for _, e := range x.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						switch k, _ := kv.Key.(*ast.Ident); {
						case k == nil:
						case k.Name == "method":
							method = methodOf(kv.Value)
						case k.Name == "path":
							path, _ = stringLit(kv.Value)
						}
					}
				}
				if method != "" && path != "" {
					routes = append(routes, method+" "+muxVar.ReplaceAllString(path, "{$1}"))
				}
			case *ast.CallExpr:
				sel, ok := x.Fun.(*ast.SelectorExpr)
				if !ok || len(x.Args) == 0 {
					break
				}
				switch sel.Sel.Name {
				case "Handle", "HandleFunc", "PathPrefix", "Path":
					if p, ok := stringLit(x.Args[0]); ok && strings.HasPrefix(p, "/") {
						paths = append(paths, muxVar.ReplaceAllString(p, "{$1}"))
					}
				}
			}
			return true
		})
	}
	if len(routes) < 20 {
		t.Fatalf("found %d routes in httpapi's source (%v): the scan no longer matches the routing table", len(routes), routes)
	}
	for _, r := range append(routes, paths...) {
		if !strings.Contains(doc, r) {
			t.Errorf("docs/api.md does not document %q", r)
		}
	}
}

// codeService answers GET /v1/cluster with an error of a given code; the
// other methods are never called.
type codeService struct {
	httpapi.Service
	code string
}

func (codeService) Removal() error { return nil }

func (s codeService) Cluster(context.Context) (api.Cluster, error) {
	return api.Cluster{}, &api.Error{Code: s.code, Message: "for the docs test"}
}

// errorCodes returns the values of the Code constants of package api.
func errorCodes(t *testing.T) []string {
	t.Helper()
	var codes []string
	for _, f := range parseDir(t, "../../api") {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				for i, name := range v.Names {
					if !strings.HasPrefix(name.Name, "Code") || i >= len(v.Values) {
						continue
					}
					if c, ok := stringLit(v.Values[i]); ok {
						codes = append(codes, c)
					}
				}
			}
		}
	}
	return codes
}

// TestAPIDocCoversEveryErrorCode asks the real HTTP layer which status and
// Retry-After each error code of the API gets, and requires the table of
// docs/api.md to say the same: a row "| `code` | status | yes |" for a code
// with Retry-After, "| `code` | status | |" for one without.
func TestAPIDocCoversEveryErrorCode(t *testing.T) {
	doc := apiDoc(t)
	codes := errorCodes(t)
	if len(codes) < 14 {
		t.Fatalf("found %d error codes in package api (%v): the scan is broken", len(codes), codes)
	}
	for _, code := range codes {
		srv := httpapi.New(httpapi.Config{Service: codeService{code: code}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/cluster", nil))
		retry := " *"
		if rec.Header().Get("Retry-After") != "" {
			retry = " *yes[^|]*"
		}
		row := regexp.MustCompile(`(?m)^\| ` + "`" + regexp.QuoteMeta(code) + "`" + ` \| ` + strconv.Itoa(rec.Code) + ` \|` + retry + `\|`)
		if !row.MatchString(doc) {
			t.Errorf("docs/api.md has no error row for code %q with status %d and Retry-After %q", code, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
}

// TestAPIDocCoversEveryField requires docs/api.md to name every JSON field
// of the API's request and answer types, and every query parameter.
func TestAPIDocCoversEveryField(t *testing.T) {
	doc := apiDoc(t)
	types := []any{
		api.CreateSessionRequest{}, api.Session{}, api.KeepAliveResponse{}, api.SessionList{},
		api.AcquireRequest{}, api.AcquireResponse{}, api.SessionRequest{}, api.Holder{}, api.Waiter{},
		api.Lock{}, api.LockList{}, api.CheckRequest{}, api.CheckResponse{},
		api.CampaignRequest{}, api.ProclaimRequest{}, api.Election{}, api.ElectionList{},
		api.Member{}, api.LeaderInfo{}, api.Cluster{}, api.ElectionStats{},
		api.CreateTokenRequest{}, api.Token{}, api.TokenList{}, acl.Rule{},
		api.FaultRequest{}, api.FaultList{}, api.FaultRules{}, api.ClockSkew{}, api.Error{},
		api.KV{}, api.KVRead{}, api.KVList{}, api.Guard{}, api.KVPutRequest{}, api.KVPutResponse{},
		api.KVDeleteRequest{}, api.KVDeleteResponse{}, api.Compare{}, api.TxnOp{}, api.TxnPut{}, api.TxnRange{},
		api.TxnRequest{}, api.TxnResult{}, api.TxnResponse{}, api.Event{}, api.KVEvents{}, api.KeyUsage{},
	}
	fields := []string{"index", "wait", "stale", "consistent", "limit", "after",
		"prefix", "keys", "count", "raw", "watch", "cas", "all"}
	for _, v := range types {
		rt := reflect.TypeOf(v)
		for f := range rt.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			fields = append(fields, name)
		}
	}
	for _, name := range fields {
		re := regexp.MustCompile("[`\"]" + regexp.QuoteMeta(name) + "[`\"=]")
		if !re.MatchString(doc) {
			t.Errorf("docs/api.md does not name the field or parameter %q", name)
		}
	}
}
