package compare

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/go-zookeeper/zk"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/lockd/lockd/bench/load"
)

// etcd's transaction: a ModRevision compare (=) per compare, a put per
// put; an index no revision can have makes no transaction.
func TestEtcdTxn(t *testing.T) {
	cmps, ops := etcdTxn([]load.KVCompare{{Key: "a", ModifyIndex: 7}, {Key: "b", ModifyIndex: 0}},
		[]load.KVPut{{Key: "a", Value: []byte("x")}, {Key: "b", Value: []byte("y")}})
	if len(cmps) != 2 || len(ops) != 2 {
		t.Fatalf("%d compares, %d ops", len(cmps), len(ops))
	}
	for i, want := range []struct {
		key string
		rev int64
	}{{"a", 7}, {"b", 0}} {
		c := cmps[i]
		rev, ok := c.TargetUnion.(*pb.Compare_ModRevision)
		if string(c.Key) != want.key || c.Target != pb.Compare_MOD || c.Result != pb.Compare_EQUAL || !ok || rev.ModRevision != want.rev {
			t.Errorf("compare %d: %+v, want %s's ModRevision = %d", i, c, want.key, want.rev)
		}
	}
	for i, want := range []string{"a", "b"} {
		if op := ops[i]; !op.IsPut() || string(op.KeyBytes()) != want || len(op.ValueBytes()) != 1 {
			t.Errorf("op %d: put %v of %q", i, op.IsPut(), op.KeyBytes())
		}
	}
	if cmps, _ := etcdTxn([]load.KVCompare{{Key: "a", ModifyIndex: math.MaxInt64 + 1}}, nil); cmps != nil {
		t.Errorf("an index past any revision gives compares %v", cmps)
	}
}

// A key's path and its modify index as a znode's version plus one.
func TestZooKeeperMapping(t *testing.T) {
	if got := znode("bench/kv/r/put/1/0"); got != "/bench/kv/r/put/1/0" {
		t.Errorf("znode %q", got)
	}
	if got := parentOf("/bench/kv/r/put/1/0"); got != "/bench/kv/r/put/1" {
		t.Errorf("parent %q", got)
	}
	if got := parentOf("/top"); got != "" {
		t.Errorf("parent of /top %q", got)
	}
	if got := zkIndex(&zk.Stat{Version: 0}); got != 1 {
		t.Errorf("index of version 0: %d", got)
	}
	for index, want := range map[uint64]int32{1: 0, 5: 4, math.MaxInt32 + 1: math.MaxInt32} {
		if v, ok := zkVersion(index); !ok || v != want {
			t.Errorf("version of index %d: %d %v, want %d", index, v, ok, want)
		}
	}
	for _, index := range []uint64{0, math.MaxInt32 + 2} {
		if v, ok := zkVersion(index); ok {
			t.Errorf("index %d has version %d", index, v)
		}
	}
}

// ZooKeeper's multi: a key compared and put is one conditional op, a key
// only compared a check (or, compared as absent, a create and a delete),
// a key only put a setData or a create as it exists.
func TestZooKeeperTxnOps(t *testing.T) {
	v := []byte("v")
	for _, tc := range []struct {
		name   string
		cmps   []load.KVCompare
		puts   []load.KVPut
		exists map[string]bool
		want   []any
	}{
		{"first kv-txn", []load.KVCompare{kc("t/a", 0), kc("t/b", 0)}, []load.KVPut{kp("t/a", v), kp("t/b", v)}, nil,
			[]any{&zk.CreateRequest{Path: "/t/a", Data: v, Acl: zkACL}, &zk.CreateRequest{Path: "/t/b", Data: v, Acl: zkACL}}},
		{"later kv-txn", []load.KVCompare{kc("t/a", 3), kc("t/b", 3)}, []load.KVPut{kp("t/a", v), kp("t/b", v)}, nil,
			[]any{&zk.SetDataRequest{Path: "/t/a", Data: v, Version: 2}, &zk.SetDataRequest{Path: "/t/b", Data: v, Version: 2}}},
		{"compares only", []load.KVCompare{kc("c", 4), kc("d", 0), kc("c", 4)}, nil, nil,
			[]any{&zk.CheckVersionRequest{Path: "/c", Version: 3}, &zk.CreateRequest{Path: "/d", Acl: zkACL}, &zk.DeleteRequest{Path: "/d", Version: 0}}},
		{"puts only", nil, []load.KVPut{kp("e", v), kp("f", v), kp("f", v)}, map[string]bool{"/e": true},
			[]any{&zk.SetDataRequest{Path: "/e", Data: v, Version: -1}, &zk.CreateRequest{Path: "/f", Data: v, Acl: zkACL},
				&zk.SetDataRequest{Path: "/f", Data: v, Version: -1}}},
		{"a key compared twice", []load.KVCompare{kc("g", 2), kc("g", 5)}, []load.KVPut{kp("g", v)}, nil,
			[]any{&zk.CheckVersionRequest{Path: "/g", Version: 4}, &zk.SetDataRequest{Path: "/g", Data: v, Version: 1}}},
	} {
		got, ok := zkTxnOps(tc.cmps, tc.puts, tc.exists)
		if !ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v %s, want %s", tc.name, ok, ops(got), ops(tc.want))
		}
	}
	if _, ok := zkTxnOps([]load.KVCompare{kc("a", math.MaxInt32+2)}, []load.KVPut{kp("a", v)}, nil); ok {
		t.Error("a compare no version can meet gave a multi")
	}
	// The index a multi leaves is the first put's: 1 for a create (not
	// the create of an absence check), the new version plus one for a
	// setData.
	absent := []any{&zk.CreateRequest{Path: "/d"}, &zk.DeleteRequest{Path: "/d"}}
	for _, tc := range []struct {
		ops  []any
		res  []zk.MultiResponse
		want uint64
	}{
		{[]any{&zk.CreateRequest{Path: "/a"}}, []zk.MultiResponse{{String: "/a"}}, 1},
		{append(absent, &zk.SetDataRequest{Path: "/a"}), []zk.MultiResponse{{}, {}, {Stat: &zk.Stat{Version: 6}}}, 7},
		{absent, []zk.MultiResponse{{}, {}}, 0},
	} {
		if got := zkTxnIndex(tc.ops, tc.res); got != tc.want {
			t.Errorf("%s: index %d, want %d", ops(tc.ops), got, tc.want)
		}
	}
}

func kc(key string, index uint64) load.KVCompare { return load.KVCompare{Key: key, ModifyIndex: index} }
func kp(key string, value []byte) load.KVPut     { return load.KVPut{Key: key, Value: value} }

func ops(ops []any) string {
	var b bytes.Buffer
	for _, op := range ops {
		switch o := op.(type) {
		case *zk.CreateRequest:
			b.WriteString("create " + o.Path + "; ")
		case *zk.DeleteRequest:
			b.WriteString("delete " + o.Path + "; ")
		case *zk.SetDataRequest:
			fmt.Fprintf(&b, "set %s at version %d; ", o.Path, o.Version)
		case *zk.CheckVersionRequest:
			fmt.Fprintf(&b, "check %s at version %d; ", o.Path, o.Version)
		}
	}
	return b.String()
}
