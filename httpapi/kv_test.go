package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
)

// The fake's namespace: the key "missing" does not exist, "old" reads as
// compacted when watched after an index below 50; every other key holds
// "v" at index 9.

func fakeKV(key string) api.KV {
	return api.KV{Key: key, Value: []byte("v"), CreateIndex: 3, ModifyIndex: 9, Version: 2}
}

func (f *fakeService) KV(ctx context.Context, key string, opt ReadOptions) (api.KVRead, error) {
	res := api.KVRead{Index: 12}
	if key != "missing" {
		kv := fakeKV(key)
		res = api.KVRead{KV: &kv, Index: 9}
	}
	return res, f.record(ctx, "KV", key, opt)
}

func (f *fakeService) KVList(ctx context.Context, opt api.KVListOptions) (api.KVList, error) {
	l := api.KVList{KVs: []api.KV{fakeKV(opt.Prefix + "a")}, Count: 1, Index: 12}
	if opt.Limit == 1 {
		l.Next = opt.Prefix + "a"
	}
	return l, f.record(ctx, "KVList", opt)
}

func (f *fakeService) KVWatch(ctx context.Context, opt api.WatchOptions) (api.KVEvents, error) {
	if err := f.record(ctx, "KVWatch", opt); err != nil {
		return api.KVEvents{}, err
	}
	if opt.Key == "old" && opt.Index < 50 {
		return api.KVEvents{}, &api.CompactedError{Oldest: 50}
	}
	return api.KVEvents{Events: []api.Event{{Index: 10, Type: "put", KV: fakeKV(opt.Key)}}, Index: 12}, nil
}

func (f *fakeService) PutKV(ctx context.Context, key string, req api.KVPutRequest) (api.KVPutResponse, error) {
	kv := api.KV{Key: key, Value: req.Value, CreateIndex: 13, ModifyIndex: 13, Version: 1, Flags: req.Flags}
	return api.KVPutResponse{KV: kv, Index: 13}, f.record(ctx, "PutKV", key, req)
}

func (f *fakeService) DeleteKV(ctx context.Context, req api.KVDelete) (api.KVDeleteResponse, error) {
	return api.KVDeleteResponse{Deleted: 1, Index: 14}, f.record(ctx, "DeleteKV", req)
}

func (f *fakeService) Txn(ctx context.Context, req api.TxnRequest) (api.TxnResponse, error) {
	return api.TxnResponse{Succeeded: true, Results: []api.TxnResult{{Type: "put", KV: &api.KV{Key: "k", ModifyIndex: 15, CreateIndex: 15, Version: 1}}}, Index: 15},
		f.record(ctx, "Txn", req)
}

func u64(n uint64) *uint64 { return &n }

// TestKV_Routes checks every route of the namespace: status, body, the
// index header and the call that reached the Service.
func TestKV_Routes(t *testing.T) {
	const kvJSON = `{"key":"a/b","value":"dg==","create_index":3,"modify_index":9,"version":2}`
	value := base64.StdEncoding.EncodeToString([]byte("hello"))
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantBody                 string
		wantIndex                string
		wantCall                 call
	}{
		{"get", "GET", "/v1/kv/a/b", "", 200, `{"kv":` + kvJSON + `,"index":9}`, "9", call{"KV", []any{"a/b", ReadOptions{}}}},
		{"get, blocking, stale", "GET", "/v1/kv/a/b?index=8&wait=10s&stale", "", 200, `{"kv":` + kvJSON + `,"index":9}`, "9",
			call{"KV", []any{"a/b", ReadOptions{Stale: true, Index: 8, Wait: 10 * time.Second}}}},
		{"get, keys", "GET", "/v1/kv/a/b?keys&consistent", "", 200, `{"kv":{"key":"a/b","create_index":3,"modify_index":9,"version":2},"index":9}`, "9",
			call{"KV", []any{"a/b", ReadOptions{Consistent: true}}}},
		{"get, missing", "GET", "/v1/kv/missing", "", 404, `{"error":"key \"missing\" does not exist (at index 12)","code":"not_found"}`, "12",
			call{"KV", []any{"missing", ReadOptions{}}}},
		{"get, raw missing", "GET", "/v1/kv/missing?raw", "", 404, `{"error":"key \"missing\" does not exist (at index 12)","code":"not_found"}`, "12",
			call{"KV", []any{"missing", ReadOptions{}}}},
		{"list", "GET", "/v1/kv?prefix=a/", "", 200, `{"kvs":[{"key":"a/a","value":"dg==","create_index":3,"modify_index":9,"version":2}],"count":1,"index":12}`, "12",
			call{"KVList", []any{api.KVListOptions{ListOptions: list(ReadOptions{}, api.DefaultKVListLimit, ""), Prefix: "a/"}}}},
		{"list, page, keys", "GET", "/v1/kv?prefix=a/&limit=1&after=a/0&keys", "", 200,
			`{"kvs":[{"key":"a/a","value":"dg==","create_index":3,"modify_index":9,"version":2}],"count":1,"index":12,"next":"a/a"}`, "12",
			call{"KVList", []any{api.KVListOptions{ListOptions: list(ReadOptions{}, 1, "a/0"), Prefix: "a/", Keys: true}}}},
		{"list, every key, count, blocking", "GET", "/v1/kv?count&index=3&wait=1s", "", 200,
			`{"kvs":[{"key":"a","value":"dg==","create_index":3,"modify_index":9,"version":2}],"count":1,"index":12}`, "12",
			call{"KVList", []any{api.KVListOptions{ListOptions: list(ReadOptions{Index: 3, Wait: time.Second}, api.DefaultKVListLimit, ""), Count: true}}}},
		{"watch a key", "GET", "/v1/kv/a/b?watch&index=9&wait=30s", "", 200,
			`{"events":[{"index":10,"type":"put","kv":` + kvJSON + `}],"index":12}`, "12",
			call{"KVWatch", []any{api.WatchOptions{ReadOptions: ReadOptions{Index: 9, Wait: 30 * time.Second}, Key: "a/b", Limit: api.DefaultWatchLimit}}}},
		{"watch a prefix, keys, limit", "GET", "/v1/kv?prefix=a/&watch&index=0&keys&limit=5", "", 200,
			`{"events":[{"index":10,"type":"put","kv":{"key":"a/","value":"dg==","create_index":3,"modify_index":9,"version":2}}],"index":12}`, "12",
			call{"KVWatch", []any{api.WatchOptions{Key: "a/", Prefix: true, Keys: true, Limit: 5}}}},
		{"put", "PUT", "/v1/kv/a/b", `{"value":"` + value + `","flags":7}`, 200,
			`{"kv":{"key":"a/b","value":"` + value + `","create_index":13,"modify_index":13,"version":1,"flags":7},"index":13}`, "",
			call{"PutKV", []any{"a/b", api.KVPutRequest{Value: []byte("hello"), Flags: 7}}}},
		{"put, no body", "PUT", "/v1/kv/a", "", 200, `{"kv":{"key":"a","create_index":13,"modify_index":13,"version":1},"index":13}`, "",
			call{"PutKV", []any{"a", api.KVPutRequest{}}}},
		{"put, every field", "PUT", "/v1/kv/q/job-", `{"session":"s1","ephemeral":true,"sequential":true,"guard":{"lock":"l","token":4},"seq":3}`, 200,
			`{"kv":{"key":"q/job-","create_index":13,"modify_index":13,"version":1},"index":13}`, "",
			call{"PutKV", []any{"q/job-", api.KVPutRequest{Session: "s1", Ephemeral: true, Sequential: true, Guard: &api.Guard{Lock: "l", Token: 4}, Seq: 3}}}},
		{"put, cas 0", "PUT", "/v1/kv/a", `{"cas":0}`, 200, `{"kv":{"key":"a","create_index":13,"modify_index":13,"version":1},"index":13}`, "",
			call{"PutKV", []any{"a", api.KVPutRequest{CAS: u64(0)}}}},
		{"delete", "DELETE", "/v1/kv/a/b", "", 200, `{"deleted":1,"index":14}`, "", call{"DeleteKV", []any{api.KVDelete{Key: "a/b"}}}},
		{"delete, cas, body", "DELETE", "/v1/kv/a/b?cas=9", `{"session":"s1","seq":2}`, 200, `{"deleted":1,"index":14}`, "",
			call{"DeleteKV", []any{api.KVDelete{Key: "a/b", CAS: u64(9), KVDeleteRequest: api.KVDeleteRequest{Session: "s1", Seq: 2}}}}},
		{"delete a prefix", "DELETE", "/v1/kv?prefix=a/", "", 200, `{"deleted":1,"index":14}`, "", call{"DeleteKV", []any{api.KVDelete{Key: "a/", Prefix: true}}}},
		{"delete every key", "DELETE", "/v1/kv?all=true", "", 200, `{"deleted":1,"index":14}`, "", call{"DeleteKV", []any{api.KVDelete{Prefix: true}}}},
		{"txn", "POST", "/v1/txn", `{"compare":[{"key":"k","target":"version","op":"=","number":0}],"success":[{"put":{"key":"k"}}],"failure":[{"get":{"key":"k"}}]}`, 200,
			`{"succeeded":true,"results":[{"type":"put","kv":{"key":"k","create_index":15,"modify_index":15,"version":1}}],"index":15}`, "",
			call{"Txn", []any{api.TxnRequest{Compare: []api.Compare{{Key: "k", Target: "version", Op: "=", Number: u64(0)}},
				Success: []api.TxnOp{{Put: &api.TxnPut{Key: "k"}}}, Failure: []api.TxnOp{{Get: &api.TxnRange{Key: "k"}}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newLeaderFake()
			rec := serve(mustNewServer(t, fake, nil), tt.method, tt.path, tt.body)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			assertJSONEqual(t, rec.Body.String(), tt.wantBody)
			if got := rec.Header().Get(api.HeaderIndex); got != tt.wantIndex {
				t.Errorf("%s = %q, want %q", api.HeaderIndex, got, tt.wantIndex)
			}
			calls := fake.Calls()
			if len(calls) != 1 || !reflect.DeepEqual(calls[0], tt.wantCall) {
				t.Errorf("calls = %+v, want [%+v]", calls, tt.wantCall)
			}
		})
	}
}

// TestKV_Raw answers a value's bytes as they are.
func TestKV_Raw(t *testing.T) {
	rec := serve(mustNewServer(t, newLeaderFake(), nil), "GET", "/v1/kv/a?raw", "")
	if rec.Code != 200 || rec.Body.String() != "v" || rec.Header().Get("Content-Type") != "application/octet-stream" || rec.Header().Get(api.HeaderIndex) != "9" {
		t.Fatalf("raw answer: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
}

// TestKV_Compacted answers a watch from before the history 410
// compacted, naming the oldest index in the message and a header.
func TestKV_Compacted(t *testing.T) {
	rec := serve(mustNewServer(t, newLeaderFake(), nil), "GET", "/v1/kv/old?watch&index=3", "")
	e := mustErrorBody(t, rec)
	if rec.Code != http.StatusGone || e.Code != api.CodeCompacted || !strings.Contains(e.Message, "50") || rec.Header().Get(api.HeaderOldestIndex) != "50" {
		t.Fatalf("compacted answer: %d %+v %v", rec.Code, e, rec.Header())
	}
}

// TestKV_BadInput refuses every malformed request of the namespace with
// 400 (413 for a body over its route's limit), a message naming what is
// wrong, and no call to the Service: nothing changes.
func TestKV_BadInput(t *testing.T) {
	big := base64.StdEncoding.EncodeToString(make([]byte, api.MaxKVValueLen+1))
	ops := make([]string, api.MaxTxnOps+1)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"get":{"key":"k%d"}}`, i)
	}
	overBound := `{"success":[` + strings.Join(ops, ",") + `]}`
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantMsg                  string
	}{
		{"invalid key", "GET", "/v1/kv/a//b", "", 400, `key "a//b" has an empty segment`},
		{"key with a bad character", "PUT", "/v1/kv/a%20b", `{}`, 400, `key "a b" has the character ' ' at byte 1`},
		{"key with a dot segment", "DELETE", "/v1/kv/a/../b", "", 400, `key "a/../b" has a ".." segment`},
		{"bad prefix", "GET", "/v1/kv?prefix=a*", "", 400, `prefix "a*" has the character '*' at byte 1`},
		{"unknown parameter", "GET", "/v1/kv/a?wath", "", 400, `unknown query parameter "wath"`},
		{"raw and watch", "GET", "/v1/kv/a?raw&watch&index=1", "", 400, "raw and watch cannot be used together"},
		{"limit without watch", "GET", "/v1/kv/a?limit=3", "", 400, "limit is a parameter of a watch"},
		{"watch without index", "GET", "/v1/kv/a?watch", "", 400, "a watch needs index"},
		{"watch limit too high", "GET", "/v1/kv/a?watch&index=1&limit=1001", "", 400, `bad limit "1001"`},
		{"list limit too high", "GET", "/v1/kv?limit=1001", "", 400, `bad limit "1001": must be an integer from 1 to 1000`},
		{"keys and count", "GET", "/v1/kv?keys&count", "", 400, "keys and count cannot be used together"},
		{"prefix watch with after", "GET", "/v1/kv?watch&index=1&after=x", "", 400, "after and count are parameters of a list"},
		{"value too long", "PUT", "/v1/kv/a", `{"value":"` + big + `"}`, 413, "value is 262145 bytes long; the limit is 262144"},
		{"body too large", "PUT", "/v1/kv/a", `{"value":"` + big + big + `"}`, 413, "request body is larger than the limit of 393216 bytes"},
		{"value not base64", "PUT", "/v1/kv/a", `{"value":"%%%"}`, 400, "illegal base64"},
		{"ephemeral without session", "PUT", "/v1/kv/a", `{"ephemeral":true}`, 400, "ephemeral needs session"},
		{"seq without session", "PUT", "/v1/kv/a", `{"seq":2}`, 400, "seq needs session"},
		{"cas and sequential", "PUT", "/v1/kv/a", `{"cas":1,"sequential":true}`, 400, "cas and sequential cannot be used together"},
		{"sequential prefix too long", "PUT", "/v1/kv/" + strings.Repeat("a", 240), `{"sequential":true}`, 400, "sequential key prefix is 240 bytes long; the limit is 236"},
		{"guard without token", "PUT", "/v1/kv/a", `{"guard":{"lock":"l"}}`, 400, "guard.token must be a positive integer"},
		{"guard with a bad lock", "PUT", "/v1/kv/a", `{"guard":{"lock":"l/","token":1}}`, 400, `guard.lock: name "l/" has an empty segment`},
		{"unknown put field", "PUT", "/v1/kv/a", `{"vlaue":"eA=="}`, 400, `unknown field "vlaue"`},
		{"delete cas 0", "DELETE", "/v1/kv/a?cas=0", "", 400, "cas=0 would delete the key only if it does not exist"},
		{"delete bad cas", "DELETE", "/v1/kv/a?cas=x", "", 400, `bad cas "x"`},
		{"delete without prefix", "DELETE", "/v1/kv", "", 400, "which is missing or empty; to delete every key of the namespace, say ?all=true"},
		{"delete empty prefix", "DELETE", "/v1/kv?prefix=", "", 400, "say ?all=true"},
		{"delete all with a prefix", "DELETE", "/v1/kv?prefix=a&all", "", 400, "all deletes every key"},
		{"txn over the bound", "POST", "/v1/txn", overBound, 400, "the transaction has 129 compares and operations; the limit is 128"},
		{"txn without body", "POST", "/v1/txn", "", 400, "request body is required"},
		{"compare target", "POST", "/v1/txn", `{"compare":[{"key":"k","target":"size","op":"=","number":1}]}`, 400,
			`compare[0].target: "size" is not a target: use one of value, version, create_index, modify_index, session, exists`},
		{"compare op", "POST", "/v1/txn", `{"compare":[{"key":"k","target":"version","op":"==","number":1}]}`, 400,
			`compare[0].op: "==" is not an operator: use one of = != < >`},
		{"compare key", "POST", "/v1/txn", `{"compare":[{"key":"","target":"version","op":"=","number":1}]}`, 400, "compare[0].key: key is empty"},
		{"compare without number", "POST", "/v1/txn", `{"compare":[{"key":"k","target":"version","op":"="}]}`, 400, `compare[0].number: target "version" needs a number`},
		{"compare with the wrong field", "POST", "/v1/txn", `{"compare":[{"key":"k","target":"version","op":"=","number":1,"value":"eA=="}]}`, 400,
			`compare[0].value: target "version" compares number, not value`},
		{"compare exists 2", "POST", "/v1/txn", `{"compare":[{"key":"k","target":"exists","op":"=","number":2}]}`, 400, `compare[0].number: target "exists" compares with 1`},
		{"compare session without one", "POST", "/v1/txn", `{"compare":[{"key":"k","target":"session","op":"="}]}`, 400, `compare[0].session: target "session" needs a session`},
		{"op with two kinds", "POST", "/v1/txn", `{"success":[{"put":{"key":"k"},"get":{"key":"k"}}]}`, 400, "success[0].op: an operation has exactly one of put, delete and get"},
		{"empty op", "POST", "/v1/txn", `{"failure":[{}]}`, 400, "failure[0].op: an operation has exactly one of"},
		{"put with a bad key", "POST", "/v1/txn", `{"success":[{"put":{"key":"a//"}}]}`, 400, `success[0].put.key: key "a//" has an empty segment`},
		{"ephemeral put without session", "POST", "/v1/txn", `{"success":[{"put":{"key":"a","ephemeral":true}}]}`, 400, "success[0].put.ephemeral: needs the transaction's session"},
		{"delete with get options", "POST", "/v1/txn", `{"success":[{"delete":{"key":"a","limit":2}}]}`, 400, "success[0].delete: limit, keys and count are options of a get"},
		{"negative get limit", "POST", "/v1/txn", `{"success":[{"get":{"key":"a","prefix":true,"limit":-1}}]}`, 400, "success[0].get.limit: -1 is negative"},
		{"txn seq without session", "POST", "/v1/txn", `{"seq":1}`, 400, "seq needs session"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newLeaderFake()
			rec := serve(mustNewServer(t, fake, nil), tt.method, tt.path, tt.body)
			e := mustErrorBody(t, rec)
			if rec.Code != tt.wantStatus || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("got %d %q, want %d containing %q", rec.Code, e.Message, tt.wantStatus, tt.wantMsg)
			}
			if calls := fake.Calls(); len(calls) != 0 {
				t.Errorf("the Service was called: %+v", calls)
			}
		})
	}
}

// TestKV_BodyLimits takes a value of the largest size in a put and the
// largest transaction body, where other routes keep api.MaxBody.
func TestKV_BodyLimits(t *testing.T) {
	srv := mustNewServer(t, newLeaderFake(), nil)
	full := base64.StdEncoding.EncodeToString(make([]byte, api.MaxKVValueLen))
	if rec := serve(srv, "PUT", "/v1/kv/a", `{"value":"`+full+`"}`); rec.Code != 200 {
		t.Fatalf("put of the largest value: %d %s", rec.Code, rec.Body)
	}
	var puts []string
	for i := range 5 {
		puts = append(puts, fmt.Sprintf(`{"put":{"key":"k%d","value":"%s"}}`, i, full))
	}
	if rec := serve(srv, "POST", "/v1/txn", `{"success":[`+strings.Join(puts, ",")+`]}`); rec.Code != 200 {
		t.Fatalf("txn of five values of 256 KiB: %d %s", rec.Code, rec.Body)
	}
	rec := serve(srv, "POST", "/v1/sessions", `{"name":"`+strings.Repeat("a", api.MaxBody)+`"}`)
	if e := mustErrorBody(t, rec); rec.Code != 413 || !strings.Contains(e.Message, fmt.Sprint(api.MaxBody)) {
		t.Fatalf("other routes keep their limit: %d %+v", rec.Code, e)
	}
}

// TestKV_Errors maps the namespace's refusals to their statuses.
func TestKV_Errors(t *testing.T) {
	for code, status := range map[string]int{api.CodeCASFailed: 409, api.CodeStaleToken: 409, api.CodeNotHolder: 409, api.CodeQuotaExceeded: 429} {
		fake := newLeaderFake()
		fake.err = api.Errorf(code, "refused")
		for _, r := range [][2]string{{"PUT", "/v1/kv/a"}, {"POST", "/v1/txn"}} {
			rec := serve(mustNewServer(t, fake, nil), r[0], r[1], `{"cas":3}`)
			if r[1] == "/v1/txn" {
				rec = serve(mustNewServer(t, fake, nil), r[0], r[1], `{"success":[{"put":{"key":"a"}}]}`)
			}
			if e := mustErrorBody(t, rec); rec.Code != status || e.Code != code {
				t.Errorf("%s %s: %d %+v", code, r[1], rec.Code, e)
			}
			// A quota is not a rate: waiting does not lift it.
			if ra := rec.Header().Get("Retry-After"); ra != "" {
				t.Errorf("%s: Retry-After %q", code, ra)
			}
		}
	}
}

// A value over api.MaxKVValueLen, in a put, in a transaction's put or in
// its compare, and a body over the route's limit, are answered 413
// too_large without reaching the Service; a value of exactly the limit
// is taken.
func TestKV_TooLarge(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	over, limit := b64(api.MaxKVValueLen+1), b64(api.MaxKVValueLen)
	huge := strings.Repeat(" ", api.MaxKVBody) + "{}"
	manyPuts := func(n int, value string) string {
		ops := make([]string, n)
		for i := range ops {
			ops[i] = fmt.Sprintf(`{"put":{"key":"k%d","value":%q}}`, i, value)
		}
		return `{"success":[` + strings.Join(ops, ",") + `]}`
	}
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"put of a value over the limit", "PUT", "/v1/kv/a", `{"value":"` + over + `"}`, 413},
		{"put body over its limit", "PUT", "/v1/kv/a", huge, 413},
		{"txn put of a value over the limit", "POST", "/v1/txn", manyPuts(1, over), 413},
		{"txn compare of a value over the limit", "POST", "/v1/txn", `{"compare":[{"key":"a","target":"value","op":"=","value":"` + over + `"}]}`, 413},
		{"txn body over its limit", "POST", "/v1/txn", manyPuts(7, limit), 413},
		{"put of a value of the limit", "PUT", "/v1/kv/a", `{"value":"` + limit + `"}`, 200},
		{"txn of values of the limit", "POST", "/v1/txn", manyPuts(5, limit), 200},
	}
	for _, tt := range tests {
		fake := newLeaderFake()
		rec := serve(mustNewServer(t, fake, nil), tt.method, tt.path, tt.body)
		if rec.Code != tt.want {
			t.Errorf("%s: %d %.200s, want %d", tt.name, rec.Code, rec.Body, tt.want)
			continue
		}
		if tt.want == 413 {
			if e := mustErrorBody(t, rec); e.Code != api.CodeTooLarge {
				t.Errorf("%s: code %q", tt.name, e.Code)
			}
		}
		if called := len(fake.Calls()) > 0; called != (tt.want == 200) {
			t.Errorf("%s: Service called %v", tt.name, called)
		}
	}
}

// TestKV_ACL checks the rules of kind key: read and write on the key in
// the path, the prefix of a list, every key of a transaction, the lock
// of a guard, and admin for a delete of every key.
func TestKV_ACL(t *testing.T) {
	fake := newLeaderFake()
	svc := &aclFake{fakeService: fake, tokens: map[string]acl.Token{
		"reader": {AccessorID: "r", Rules: []acl.Rule{{Kind: acl.Key, Prefix: "cfg/", Access: acl.Read}}},
		"writer": {AccessorID: "w", Rules: []acl.Rule{{Kind: acl.Key, Prefix: "cfg/", Access: acl.Write}}},
		"admin":  {AccessorID: "a", Admin: true},
	}}
	cfg := testConfig(t, svc)
	cfg.ACL = svc
	srv := New(cfg)
	tests := []struct {
		token, method, path, body string
		want                      int
	}{
		{"reader", "GET", "/v1/kv/cfg/a", "", 200},
		{"reader", "GET", "/v1/kv/other", "", 403},
		{"reader", "GET", "/v1/kv?prefix=cfg/x", "", 200},
		{"reader", "GET", "/v1/kv?prefix=cf", "", 403},
		{"reader", "GET", "/v1/kv/cfg/a?watch&index=1", "", 200},
		{"reader", "PUT", "/v1/kv/cfg/a", `{}`, 403},
		{"writer", "PUT", "/v1/kv/cfg/a", `{}`, 200},
		{"writer", "PUT", "/v1/kv/cfg/a", `{"guard":{"lock":"l","token":3}}`, 403},
		{"writer", "DELETE", "/v1/kv?prefix=cfg/", "", 200},
		{"writer", "DELETE", "/v1/kv?all", "", 403},
		{"admin", "DELETE", "/v1/kv?all", "", 200},
		{"writer", "POST", "/v1/txn", `{"success":[{"put":{"key":"cfg/a"}}]}`, 200},
		{"writer", "POST", "/v1/txn", `{"compare":[{"key":"other","target":"exists","op":"=","number":0}],"success":[{"put":{"key":"cfg/a"}}]}`, 403},
		{"reader", "POST", "/v1/txn", `{"success":[{"get":{"key":"cfg/","prefix":true}}]}`, 200},
		{"reader", "POST", "/v1/txn", `{"failure":[{"delete":{"key":"cfg/a"}}]}`, 403},
		{"writer", "POST", "/v1/txn", `{"success":[{"delete":{"key":"","prefix":true}}]}`, 403},
		{"", "GET", "/v1/kv/cfg/a", "", 401},
	}
	for _, tt := range tests {
		before := len(fake.Calls())
		req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%s %s %s as %q: %d %s, want %d", tt.method, tt.path, tt.body, tt.token, rec.Code, rec.Body, tt.want)
		}
		if called := len(fake.Calls()) > before; called != (tt.want == 200) {
			t.Errorf("%s %s as %q: Service called %v", tt.method, tt.path, tt.token, called)
		}
	}
}

// A write reaches the Service with the accessor id of its token, which
// owns the keys it puts; without ACLs, with none.
func TestKV_WritesCarryTheirOwner(t *testing.T) {
	fake := newLeaderFake()
	svc := &aclFake{fakeService: fake, tokens: map[string]acl.Token{
		"writer": {AccessorID: "w", Rules: []acl.Rule{{Kind: acl.Key, Prefix: "cfg/", Access: acl.Write}}},
	}}
	cfg := testConfig(t, svc)
	cfg.ACL = svc
	for _, srv := range []*Server{New(cfg), mustNewServer(t, fake, nil)} {
		want := "w"
		if srv.acl == nil {
			want = ""
		}
		for _, r := range [][3]string{{"PUT", "/v1/kv/cfg/a", `{}`}, {"DELETE", "/v1/kv/cfg/a", ""}, {"POST", "/v1/txn", `{"success":[{"put":{"key":"cfg/a"}}]}`}} {
			req := httptest.NewRequest(r[0], r[1], strings.NewReader(r[2]))
			req.Header.Set("Authorization", "Bearer writer")
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			calls := fake.Calls()
			var got string
			switch a := calls[len(calls)-1].Args[len(calls[len(calls)-1].Args)-1].(type) {
			case api.KVPutRequest:
				got = a.Owner
			case api.KVDelete:
				got = a.Owner
			case api.TxnRequest:
				got = a.Owner
			default:
				t.Fatalf("%s %s: call %+v", r[0], r[1], calls[len(calls)-1])
			}
			if rec.Code != 200 || got != want {
				t.Errorf("%s %s: %d, owner %q, want %q", r[0], r[1], rec.Code, got, want)
			}
		}
	}
	// A client cannot name an owner.
	rec := serve(mustNewServer(t, fake, nil), "PUT", "/v1/kv/a", `{"owner":"w"}`)
	if rec.Code != 400 {
		t.Errorf("a put naming an owner: %d", rec.Code)
	}
}

// Token limits: create takes max_keys and max_bytes for a token with
// rules, refuses them on an admin token and below 0, and self shows them
// with what the token owns.
func TestACL_TokenLimits(t *testing.T) {
	fake := newLeaderFake()
	svc := &aclFake{fakeService: fake, tokens: map[string]acl.Token{
		"admin":  {AccessorID: "a", Admin: true},
		"writer": {AccessorID: "w", Rules: []acl.Rule{{Kind: acl.Key, Access: acl.Write}}, MaxKeys: 5, MaxBytes: 100},
	}}
	cfg := testConfig(t, svc)
	cfg.ACL = svc
	srv := New(cfg)
	do := func(token, method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec
	}
	rule := `"rules":[{"kind":"key","prefix":"","access":"write"}]`
	rec := do("admin", "POST", "/v1/acl/tokens", `{`+rule+`,"max_keys":3,"max_bytes":4096}`)
	if rec.Code != 200 && rec.Code != 201 {
		t.Fatalf("create with limits: %d %s", rec.Code, rec.Body)
	}
	calls := fake.Calls()
	if req := calls[len(calls)-1].Args[0].(api.CreateTokenRequest); req.MaxKeys != 3 || req.MaxBytes != 4096 {
		t.Fatalf("create reached the service as %+v", req)
	}
	if !strings.Contains(rec.Body.String(), `"max_keys":3,"max_bytes":4096`) {
		t.Fatalf("create answered %s", rec.Body)
	}
	for _, body := range []string{`{"admin":true,"max_keys":3}`, `{` + rule + `,"max_bytes":-1}`, `{` + rule + `,"max_keys":"3"}`} {
		before := len(fake.Calls())
		if rec := do("admin", "POST", "/v1/acl/tokens", body); rec.Code != 400 || len(fake.Calls()) != before {
			t.Errorf("create %s: %d %s", body, rec.Code, rec.Body)
		}
	}
	rec = do("writer", "GET", "/v1/acl/tokens/self", "")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"max_keys":5,"max_bytes":100,"usage":{"keys":2,"bytes":10}`) {
		t.Fatalf("self: %d %s", rec.Code, rec.Body)
	}
}

// aclFake is a fakeService with ACL tokens by secret; no session has an
// owner.
type aclFake struct {
	*fakeService
	tokens map[string]acl.Token
}

func (a *aclFake) ResolveToken(secret string) (acl.Token, bool) {
	t, ok := a.tokens[secret]
	return t, ok
}

func (a *aclFake) SessionOwner(string) (string, bool) { return "", false }

func (a *aclFake) CreateToken(ctx context.Context, req api.CreateTokenRequest) (api.Token, error) {
	return api.Token{AccessorID: "new", MaxKeys: req.MaxKeys, MaxBytes: req.MaxBytes}, a.record(ctx, "CreateToken", req)
}

// KeyUsage answers that every token owns 2 keys of 10 bytes.
func (a *aclFake) KeyUsage(string) *api.KeyUsage { return &api.KeyUsage{Keys: 2, Bytes: 10} }

func (a *aclFake) RevokeToken(context.Context, string) error { return nil }

func (a *aclFake) Tokens(context.Context) (api.TokenList, error) { return api.TokenList{}, nil }
