package validate

import (
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/traffic"
)

// The namespace's checkers against hand-made histories: each breach of
// the guarantee it guards caught, and the controls passed.

func kvPut(client int, value string, index uint64, call, ret int64) history.KVOp {
	return history.KVOp{Client: client, Group: "g", Kind: history.KVPut, Value: value, Index: index, Status: history.OK, Call: call, Return: ret}
}

func kvGet(client int, value string, index uint64, call, ret int64) history.KVOp {
	return history.KVOp{Client: client, Group: "g", Kind: history.KVGet, Status: history.OK, Call: call, Return: ret,
		Seen: []history.KVSeen{{Exists: true, Value: value, ModifyIndex: index}}}
}

func TestCheckKV(t *testing.T) {
	dir := t.TempDir()
	repeat := kvPut(0, "a", 0, 25, 28)
	repeat.Kind, repeat.Status, repeat.Code = history.KVRepeat, history.Fail, "request_repeated"
	clean := []history.KVOp{kvPut(0, "a", 5, 0, 10), kvPut(0, "b", 6, 15, 20), repeat, kvGet(1, "b", 6, 30, 40)}
	if v := CheckKV(clean, time.Second, dir); !v.OK() || v.Checked != 4 {
		t.Errorf("clean history: %s %v", v, v.Details)
	}
	// The repeat applied again: it answers ok, and a read then sees the
	// first value back.
	applied := repeat
	applied.Status, applied.Code, applied.Index = history.OK, "", 7
	twice := []history.KVOp{kvPut(0, "a", 5, 0, 10), kvPut(0, "b", 6, 15, 20), applied, kvGet(1, "a", 7, 30, 40)}
	v := CheckKV(twice, time.Second, dir)
	if v.Violations != 2 || !strings.Contains(strings.Join(v.Details, "\n"), "applied again") {
		t.Errorf("a put applied twice: %s %v", v, v.Details)
	}
	if v.Artifact == "" {
		t.Errorf("no visualization written")
	}
	// A read of a value overwritten before it began.
	stale := []history.KVOp{kvPut(0, "a", 5, 0, 10), kvPut(0, "b", 6, 15, 20), kvGet(1, "a", 5, 30, 40)}
	if v := CheckKV(stale, time.Second, dir); v.Violations != 1 {
		t.Errorf("a stale read: %s %v", v, v.Details)
	}
}

func TestCheckWatches(t *testing.T) {
	writes := []traffic.KVWrite{
		{Key: "k", Value: "a", Index: 5, Status: history.OK},
		{Key: "k", Value: "b", Index: 6, Status: history.OK},
		{Key: "k", Value: "c", Status: history.Fail},
		{Key: "j", Value: "d", Index: 7, Status: history.OK},
		{Key: "k", Delete: true, Index: 8, Status: history.OK},
	}
	ev := func(index uint64, key, value string) traffic.WatchedEvent {
		typ := "put"
		if value == "" {
			typ = "delete"
		}
		return traffic.WatchedEvent{Index: index, Type: typ, Key: key, Value: value}
	}
	all := []traffic.WatchedEvent{ev(5, "k", "a"), ev(6, "k", "b"), ev(7, "j", "d"), ev(8, "k", "")}
	seg := func(w int, after uint64, events ...traffic.WatchedEvent) traffic.WatchLog {
		return traffic.WatchLog{Watcher: w, After: after, Events: events}
	}
	tests := []struct {
		name string
		logs []traffic.WatchLog
		want string // "" for a clean verdict, else a word of the violation
	}{
		{"every write, in order", []traffic.WatchLog{seg(0, 4, all...), seg(1, 5, all[1:]...)}, ""},
		{"an acknowledged write missing", []traffic.WatchLog{seg(0, 4, all[0], all[2], all[3])}, "never arrived"},
		{"an event twice", []traffic.WatchLog{seg(0, 4, all[0], all[1], all[1], all[2], all[3])}, "twice"},
		{"out of order", []traffic.WatchLog{seg(0, 4, all[1], all[0], all[2], all[3])}, "after one at index"},
		{"an event before the read", []traffic.WatchLog{seg(0, 5, all...)}, "not after the read"},
		{"a refused write's value", []traffic.WatchLog{seg(0, 4, append(all[:2:2], ev(7, "k", "c"), all[2], all[3])...)}, "no write that was not refused"},
		{"a value written to another key", []traffic.WatchLog{seg(0, 4, all[0], all[1], ev(7, "j", "b"), all[3])}, "no write"},
		{"a delete nothing made", []traffic.WatchLog{seg(0, 4, all[0], all[1], ev(7, "j", ""), all[3])}, "nothing deleted"},
		{"a write arriving changed", []traffic.WatchLog{seg(0, 4, all[0], ev(6, "k", "a"), all[2], all[3])}, "not as written"},
		{"two watchers disagreeing on an unacknowledged write", []traffic.WatchLog{
			seg(0, 4, all[0], all[1], ev(7, "x", "q"), all[2], all[3]), seg(1, 4, all...)}, "disagree"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := writes
			if strings.Contains(tt.name, "unacknowledged") {
				w = append(w, traffic.KVWrite{Key: "x", Value: "q", Status: history.Unknown})
			}
			v := CheckWatches(tt.logs, w)
			got := strings.Join(v.Details, "\n")
			switch {
			case tt.want == "" && (!v.OK() || v.Checked == 0):
				t.Errorf("want clean, got %s %v", v, v.Details)
			case tt.want != "" && (v.Violations == 0 || !strings.Contains(got, tt.want)):
				t.Errorf("want a violation saying %q, got %s %v", tt.want, v, v.Details)
			}
		})
	}
}

func TestCheckEphemeral(t *testing.T) {
	sessions := []traffic.EphemeralSession{
		{Session: "s1", Keys: []string{"eph/s1-0"}, Ended: 100, How: "destroy"},
		{Session: "s2", Keys: []string{"eph/s2-0"}, How: "expire"}, // never seen gone
	}
	clean := []traffic.EphemeralRead{
		{Call: 50, Return: 60, Keys: []string{"eph/s1-0", "eph/s2-0"}},
		{Call: 90, Return: 120, Keys: []string{"eph/s1-0"}}, // invoked before the end: either
		{Call: 130, Return: 140, Keys: []string{"eph/s2-0"}},
	}
	if v := CheckEphemeral(sessions, clean); !v.OK() || v.Checked != 1 {
		t.Errorf("clean: %s %v", v, v.Details)
	}
	survived := append(clean, traffic.EphemeralRead{Call: 150, Return: 160, Keys: []string{"eph/s1-0"}})
	if v := CheckEphemeral(sessions, survived); v.Violations != 1 {
		t.Errorf("a key after its session's end: %s %v", v, v.Details)
	}
}

func TestCheckFencedWrites(t *testing.T) {
	grants := []traffic.KVGrant{{Session: "a", Token: 5, Call: 0, Return: 10}, {Session: "b", Token: 9, Call: 50, Return: 60}}
	w := func(token uint64, released int64, st history.Status, index uint64, call int64) traffic.FencedKVWrite {
		return traffic.FencedKVWrite{Token: token, Released: released, Status: st, Index: index, Call: call, Return: call + 5}
	}
	clean := []traffic.FencedKVWrite{w(5, 0, history.OK, 11, 20), w(5, 40, history.Fail, 0, 45), w(5, 0, history.Fail, 0, 70), w(9, 0, history.OK, 12, 80)}
	if v := CheckFencedWrites(grants, clean); !v.OK() || v.Checked != 2 {
		t.Errorf("clean: %s %v", v, v.Details)
	}
	tests := []struct {
		name   string
		writes []traffic.FencedKVWrite
		want   string
	}{
		{"accepted after its release", []traffic.FencedKVWrite{w(5, 40, history.OK, 13, 45)}, "after its holder's release"},
		{"accepted after a newer grant", []traffic.FencedKVWrite{w(5, 0, history.OK, 13, 70)}, "although token 9"},
		{"tokens going down in the store", []traffic.FencedKVWrite{w(9, 0, history.OK, 12, 55), w(5, 0, history.OK, 13, 45), w(5, 40, history.Fail, 0, 41)},
			"after the one at index 12"},
	}
	for _, tt := range tests {
		v := CheckFencedWrites(grants, tt.writes)
		if v.Violations == 0 || !strings.Contains(strings.Join(v.Details, "\n"), tt.want) {
			t.Errorf("%s: want %q, got %s %v", tt.name, tt.want, v, v.Details)
		}
	}
}
