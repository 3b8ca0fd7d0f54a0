package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"time"

	"github.com/lockd/lockd/test/proccluster"
)

// diskFull fills one node's disk (half the time the leader's): its data
// dir is a small file system of its own (proccluster's DiskSize, which the
// runner sets when this fault is asked for, with the bolt log store, whose
// appends need new space at once; the WAL's preallocated segments would
// take appends until they roll over). Raft's writes on that node then fail:
// a leader steps down, a follower refuses entries, until the heal frees
// the space. Nothing acknowledged may be lost: the run's durability check
// and every checker run as after any fault.
type diskFull struct {
	victim *proccluster.Node
}

// DiskSize is the size of each node's disk in runs with the disk-full
// fault: room for the bolt log of a minute's run and two snapshots.
const DiskSize = "256m"

func (d *diskFull) Name() string { return "disk-full" }

func (d *diskFull) Available(_ context.Context, env *Env) error {
	for _, n := range env.Cluster.Nodes {
		if !n.HasDisk() {
			return fmt.Errorf("%s's data dir is not a disk of its own (the runner mounts one per node when disk-full is asked for)", n.ID)
		}
	}
	return nil
}

func (d *diskFull) Inject(ctx context.Context, env *Env, rng *rand.Rand) (string, error) {
	v, role := leaderOrNode(ctx, env, rng)
	if v == nil {
		return "", errors.New("no running node")
	}
	d.victim = v
	n, err := v.FillDisk()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("disk of %s %s filled (%d MiB written)", role, v.ID, n>>20), nil
}

func (d *diskFull) Heal(_ context.Context, _ *Env) error {
	if d.victim == nil {
		return nil
	}
	if err := d.victim.FreeDisk(); err != nil {
		return err
	}
	d.victim = nil
	return nil
}

func (d *diskFull) Hold(env *Env, rng *rand.Rand) time.Duration {
	return between(rng, time.Second, env.TTL+4*time.Second)
}

// NeedsDisks reports whether the faults fs include disk-full: the nodes
// then need a disk each (proccluster's DiskSize) and the bolt log store.
func NeedsDisks(fs []Failpoint) bool {
	for _, f := range fs {
		if _, ok := f.(*diskFull); ok {
			return true
		}
	}
	return false
}

// diskTools reports what the host lacks for disk-full: root and the mount
// command, to give each node a tmpfs of its own.
func diskTools() error {
	if os.Geteuid() != 0 {
		return errors.New("need root to mount a small file system per node")
	}
	if _, err := exec.LookPath("mount"); err != nil {
		return errors.New("need the mount command")
	}
	return nil
}
