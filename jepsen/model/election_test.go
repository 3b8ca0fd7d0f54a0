package model

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockd/lockd/jepsen/history"
)

// eop is an election operation: a campaign (Acquire), resign (Release),
// proclaim or leader read, with the value it asked for or saw.
func eop(client int, kind history.Kind, session string, st history.Status, token uint64, value string, call, ret int64) porcupine.Operation {
	o := history.Op{Client: client, Lock: "e", Kind: kind, Session: session, Status: st, Token: token, Value: value, Call: call, Return: ret}
	if kind == history.Read {
		o.Holder, o.Session = session, ""
	}
	return porcupine.Operation{ClientId: client, Input: o, Output: o, Call: call, Return: ret}
}

func TestElection_Linearizability(t *testing.T) {
	C, R, P, Rd := history.Acquire, history.Release, history.Proclaim, history.Read
	ok, fail, unk := history.OK, history.Fail, history.Unknown
	inf := history.Infinity
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"read sees the campaign's value", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(9, Rd, "a", ok, 5, "a1", 20, 30)}, porcupine.Ok},
		{"read sees another value", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(9, Rd, "a", ok, 5, "b1", 20, 30)}, porcupine.Illegal},
		{"read sees the proclaimed value", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(0, P, "a", ok, 0, "a2", 20, 30), eop(9, Rd, "a", ok, 5, "a2", 40, 50)}, porcupine.Ok},
		{"read after a proclaim sees the old value", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(0, P, "a", ok, 0, "a2", 20, 30), eop(9, Rd, "a", ok, 5, "a1", 40, 50)}, porcupine.Illegal},
		{"reads during a proclaim see either value", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(0, P, "a", ok, 0, "a2", 20, 60),
			eop(8, Rd, "a", ok, 5, "a1", 25, 30), eop(9, Rd, "a", ok, 5, "a2", 40, 50)}, porcupine.Ok},
		{"the value goes back during a proclaim", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(0, P, "a", ok, 0, "a2", 20, 60),
			eop(8, Rd, "a", ok, 5, "a2", 25, 30), eop(9, Rd, "a", ok, 5, "a1", 40, 50)}, porcupine.Illegal},
		{"a proclaim by a non-leader succeeds", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(1, P, "b", ok, 0, "b1", 20, 30)}, porcupine.Illegal},
		{"a refused proclaim changes nothing", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(0, P, "a", fail, 0, "a2", 20, 30), eop(9, Rd, "a", ok, 5, "a2", 40, 50)}, porcupine.Illegal},
		{"an unknown proclaim may land late", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(0, P, "a", unk, 0, "a2", 20, inf),
			eop(8, Rd, "a", ok, 5, "a1", 40, 50), eop(9, Rd, "a", ok, 5, "a2", 60, 70)}, porcupine.Ok},
		{"a new leader's value is its campaign's", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(0, P, "a", ok, 0, "a2", 20, 30), eop(0, R, "a", ok, 0, "", 40, 50),
			eop(1, C, "b", ok, 7, "b1", 60, 70), eop(9, Rd, "b", ok, 7, "a2", 80, 90)}, porcupine.Illegal},
		{"a campaign of unknown outcome won with its value", []porcupine.Operation{
			eop(0, C, "a", unk, 0, "a1", 0, inf), eop(9, Rd, "a", ok, 5, "a1", 20, 30)}, porcupine.Ok},
		{"a campaign of unknown outcome won with another value", []porcupine.Operation{
			eop(0, C, "a", unk, 0, "a1", 0, inf), eop(9, Rd, "a", ok, 5, "zz", 20, 30)}, porcupine.Illegal},
		{"the leader's campaign again keeps the value", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(0, C, "a", ok, 5, "a9", 20, 30), eop(9, Rd, "a", ok, 5, "a1", 40, 50)}, porcupine.Ok},
		{"the leader's campaign again changed the value", []porcupine.Operation{
			eop(0, C, "a", ok, 5, "a1", 0, 10), eop(0, C, "a", ok, 5, "a9", 20, 30), eop(9, Rd, "a", ok, 5, "a9", 40, 50)}, porcupine.Illegal},
	}
	m := Election.ToModel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := porcupine.CheckOperationsTimeout(m, tt.ops, 10*time.Second); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
