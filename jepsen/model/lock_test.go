package model

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockd/lockd/jepsen/history"
)

func op(client int, kind history.Kind, session string, st history.Status, token uint64, call, ret int64) porcupine.Operation {
	o := history.Op{Client: client, Lock: "l", Kind: kind, Session: session, Status: st, Token: token, Call: call, Return: ret}
	if kind == history.Read {
		o.Holder, o.Session = session, ""
	}
	if kind == history.Acquire && st == history.Fail {
		o.Code = "lock_held"
	}
	return porcupine.Operation{ClientId: client, Input: o, Output: o, Call: call, Return: ret}
}

func TestLock_Linearizability(t *testing.T) {
	A, R, E, Rd := history.Acquire, history.Release, history.End, history.Read
	ok, fail, unk := history.OK, history.Fail, history.Unknown
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"acquire release acquire", []porcupine.Operation{
			op(0, A, "a", ok, 5, 0, 10), op(0, R, "a", ok, 0, 20, 30), op(1, A, "b", ok, 7, 40, 50)}, porcupine.Ok},
		{"two holders at once", []porcupine.Operation{
			op(0, A, "a", ok, 5, 0, 10), op(1, A, "b", ok, 7, 20, 30)}, porcupine.Illegal},
		{"token goes back", []porcupine.Operation{
			op(0, A, "a", ok, 5, 0, 10), op(0, R, "a", ok, 0, 20, 30), op(1, A, "b", ok, 4, 40, 50)}, porcupine.Illegal},
		{"held answer while free", []porcupine.Operation{
			op(1, A, "b", fail, 0, 0, 10)}, porcupine.Illegal},
		{"session end frees the lock", []porcupine.Operation{
			op(0, A, "a", ok, 5, 0, 10), op(0, E, "a", unk, 0, 20, 1000), op(1, A, "b", ok, 7, 40, 50)}, porcupine.Ok},
		{"lock lost before the session could end", []porcupine.Operation{
			op(0, A, "a", ok, 5, 0, 10), op(1, A, "b", ok, 7, 40, 50), op(0, E, "a", unk, 0, 60, 1000)}, porcupine.Illegal},
		{"unknown acquire may have happened", []porcupine.Operation{
			op(0, A, "a", unk, 0, 0, 1000), op(2, Rd, "a", ok, 9, 20, 30), op(1, A, "b", fail, 0, 40, 50)}, porcupine.Ok},
		// Tokens only grow: a grant the client learns after an acquire of
		// unknown outcome still comes after every earlier grant.
		{"token after an unknown acquire is higher", []porcupine.Operation{
			op(1, A, "b", ok, 9, 0, 10), op(1, R, "b", ok, 0, 20, 30),
			op(0, A, "a", unk, 0, 40, 1000), op(0, A, "a", ok, 12, 50, 60)}, porcupine.Ok},
		{"token goes back after an unknown acquire", []porcupine.Operation{
			op(1, A, "b", ok, 9, 0, 10), op(1, R, "b", ok, 0, 20, 30),
			op(0, A, "a", unk, 0, 40, 1000), op(0, A, "a", ok, 4, 50, 60)}, porcupine.Illegal},
		{"token goes back after an unknown acquire invoked before the grant", []porcupine.Operation{
			op(0, A, "a", unk, 0, 5, 1000), op(1, A, "b", ok, 9, 0, 10), op(1, R, "b", ok, 0, 20, 30),
			op(0, A, "a", ok, 4, 50, 60)}, porcupine.Illegal},
		{"equal token after an unknown acquire", []porcupine.Operation{
			op(1, A, "b", ok, 9, 0, 10), op(1, R, "b", ok, 0, 20, 30),
			op(0, A, "a", unk, 0, 40, 1000), op(0, A, "a", ok, 9, 50, 60)}, porcupine.Illegal},
		{"stale read after hand-over", []porcupine.Operation{
			op(0, A, "a", ok, 5, 0, 10), op(0, R, "a", ok, 0, 20, 30), op(1, A, "b", ok, 7, 40, 50),
			op(2, Rd, "a", ok, 5, 60, 70)}, porcupine.Illegal},
	}
	m := Lock.ToModel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(m, tt.ops, 10*time.Second); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
