package model

import (
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/lockd/lockd/jepsen/history"
)

func kvop(client int, kind history.KVKind, key int, value string, st history.Status, call, ret int64) history.KVOp {
	return history.KVOp{Client: client, Group: "g", Kind: kind, Key: key, Value: value, Status: st, Call: call, Return: ret}
}

func seen(value string, mod uint64) []history.KVSeen {
	if value == "" {
		return []history.KVSeen{{}}
	}
	return []history.KVSeen{{Exists: true, Value: value, ModifyIndex: mod}}
}

func checkKV(t *testing.T, ops []history.KVOp) porcupine.CheckResult {
	t.Helper()
	var pops []porcupine.Operation
	for i, op := range ops {
		op.ID = int64(i + 1)
		pops = append(pops, porcupine.Operation{ClientId: op.Client, Input: op, Output: op, Call: op.Call, Return: op.Return})
	}
	res, _ := porcupine.CheckOperationsVerbose(KV.ToModel(), pops, 0)
	return res
}

// Each history is one a correct store can produce (ok) or cannot
// (illegal): reads of the last write, compare-and-swaps that hold exactly
// when the modify index matches, transactions all or nothing, deletes,
// lost answers either way, and repeats that change nothing.
func TestKV_Histories(t *testing.T) {
	put := func(c int, key int, v string, idx uint64, call, ret int64) history.KVOp {
		op := kvop(c, history.KVPut, key, v, history.OK, call, ret)
		op.Index = idx
		return op
	}
	get := func(c int, key int, v string, mod uint64, call, ret int64) history.KVOp {
		op := kvop(c, history.KVGet, key, "", history.OK, call, ret)
		op.Seen = seen(v, mod)
		return op
	}
	cas := func(c int, key int, expect uint64, v string, st history.Status, code string, idx uint64, call, ret int64) history.KVOp {
		op := kvop(c, history.KVCAS, key, v, st, call, ret)
		op.CAS, op.Code, op.Index = expect, code, idx
		return op
	}
	txn := func(c int, expect, v0, v1 string, ok bool, idx uint64, s []history.KVSeen, call, ret int64) history.KVOp {
		op := kvop(c, history.KVTxn, 0, v0, history.OK, call, ret)
		op.Value2, op.Expect, op.Succeeded, op.Index, op.Seen = v1, expect, ok, idx, s
		return op
	}
	del := func(c int, key, deleted int, call, ret int64) history.KVOp {
		op := kvop(c, history.KVDelete, key, "", history.OK, call, ret)
		op.Deleted = deleted
		return op
	}
	lost := func(op history.KVOp) history.KVOp {
		op.Status, op.Return, op.Index = history.Unknown, 1000, 0
		return op
	}
	repeat := func(op history.KVOp, call, ret int64) history.KVOp {
		op.Kind, op.Call, op.Return, op.Status, op.Code = history.KVRepeat, call, ret, history.Fail, "request_repeated"
		return op
	}
	both := func(a, b string, mod uint64) []history.KVSeen {
		return []history.KVSeen{{Exists: a != "", Value: a, ModifyIndex: mod}, {Exists: b != "", Value: b, ModifyIndex: mod}}
	}
	tests := []struct {
		name string
		ops  []history.KVOp
		want porcupine.CheckResult
	}{
		{"read of the last write", []history.KVOp{put(0, 0, "a", 5, 0, 10), get(1, 0, "a", 5, 20, 30)}, porcupine.Ok},
		{"read of an overwritten value", []history.KVOp{put(0, 0, "a", 5, 0, 10), put(0, 0, "b", 6, 20, 30), get(1, 0, "a", 5, 40, 50)}, porcupine.Illegal},
		{"read with the wrong index", []history.KVOp{put(0, 0, "a", 5, 0, 10), get(1, 0, "a", 7, 20, 30)}, porcupine.Illegal},
		{"read of a key never written", []history.KVOp{get(1, 0, "", 0, 0, 10)}, porcupine.Ok},
		{"read of a value never written", []history.KVOp{get(1, 0, "z", 3, 0, 10)}, porcupine.Illegal},
		{"concurrent write either way", []history.KVOp{put(0, 0, "a", 5, 0, 100), get(1, 0, "", 0, 10, 20), get(1, 0, "a", 5, 30, 40)}, porcupine.Ok},
		{"cas on the current index holds", []history.KVOp{put(0, 0, "a", 5, 0, 10), cas(1, 0, 5, "b", history.OK, "", 6, 20, 30), get(0, 0, "b", 6, 40, 50)}, porcupine.Ok},
		{"cas on an old index granted", []history.KVOp{put(0, 0, "a", 5, 0, 10), put(0, 0, "b", 6, 20, 30), cas(1, 0, 5, "c", history.OK, "", 7, 40, 50)}, porcupine.Illegal},
		{"cas on the current index refused", []history.KVOp{put(0, 0, "a", 5, 0, 10), cas(1, 0, 5, "b", history.Fail, "cas_failed", 0, 20, 30)}, porcupine.Illegal},
		{"create-only cas over an existing key", []history.KVOp{put(0, 0, "a", 5, 0, 10), cas(1, 0, 0, "b", history.OK, "", 6, 20, 30)}, porcupine.Illegal},
		{"cas after a lost put: index learned by a read", []history.KVOp{lost(put(0, 0, "a", 5, 0, 10)), get(1, 0, "a", 5, 20, 30),
			cas(1, 0, 4, "b", history.OK, "", 6, 40, 50)}, porcupine.Illegal},
		{"lost put never applied", []history.KVOp{lost(put(0, 0, "a", 5, 0, 10)), get(1, 0, "", 0, 20, 30)}, porcupine.Ok},
		{"txn: both written at once", []history.KVOp{put(0, 0, "a", 5, 0, 10), txn(1, "a", "x", "y", true, 6, nil, 20, 30),
			get(0, 1, "y", 6, 40, 50)}, porcupine.Ok},
		{"txn: only one key written", []history.KVOp{put(0, 0, "a", 5, 0, 10), txn(1, "a", "x", "y", true, 6, nil, 20, 30),
			get(0, 0, "x", 6, 40, 50), get(0, 1, "", 0, 60, 70)}, porcupine.Illegal},
		{"txn: took the failure branch although the compare held", []history.KVOp{put(0, 0, "a", 5, 0, 10),
			txn(1, "a", "x", "y", false, 0, both("a", "", 5), 20, 30)}, porcupine.Illegal},
		{"txn: failure branch reads", []history.KVOp{put(0, 0, "a", 5, 0, 10), txn(1, "q", "x", "y", false, 0, both("a", "", 5), 20, 30)}, porcupine.Ok},
		{"delete, then absent", []history.KVOp{put(0, 0, "a", 5, 0, 10), del(1, 0, 1, 20, 30), get(0, 0, "", 0, 40, 50)}, porcupine.Ok},
		{"delete of a missing key reporting one", []history.KVOp{del(1, 0, 1, 20, 30)}, porcupine.Illegal},
		{"a refused repeat changes nothing", []history.KVOp{put(0, 0, "a", 5, 0, 10), put(0, 0, "b", 6, 20, 30),
			repeat(put(0, 0, "a", 5, 0, 10), 40, 50), get(1, 0, "b", 6, 60, 70)}, porcupine.Ok},
		{"a repeat applied again", []history.KVOp{put(0, 0, "a", 5, 0, 10), put(0, 0, "b", 6, 20, 30),
			repeat(put(0, 0, "a", 5, 0, 10), 40, 50), get(1, 0, "a", 7, 60, 70)}, porcupine.Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkKV(t, tt.ops); got != tt.want {
				t.Errorf("porcupine says %v, want %v", got, tt.want)
			}
		})
	}
}
