package proccluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// fillerName is the file FillDisk writes in a node's data dir.
const fillerName = "disk-filler"

// mountDisks mounts a tmpfs of c.cfg.DiskSize at every node's data dir
// (Config.DiskSize). It needs root and the mount command.
func (c *Cluster) mountDisks() error {
	for _, n := range c.Nodes {
		if err := os.MkdirAll(n.DataDir, 0o750); err != nil {
			return err
		}
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+c.cfg.DiskSize+",mode=0750", "tmpfs", n.DataDir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("cluster: mount a %s tmpfs at %s: %w: %s", c.cfg.DiskSize, n.DataDir, err, out)
		}
		n.disk = true
	}
	return nil
}

// Unmount unmounts the nodes' small disks (Config.DiskSize), once their
// processes are gone: call it after Close. Their data is lost; the nodes'
// logs, beside the data dirs, are kept.
func (c *Cluster) Unmount() {
	for _, n := range c.Nodes {
		if n.disk {
			_ = exec.Command("umount", "-l", n.DataDir).Run()
			n.disk = false
		}
	}
}

// HasDisk reports whether the node's data dir is a small disk of its own
// (Config.DiskSize), which FillDisk can fill.
func (n *Node) HasDisk() bool { return n.disk }

// FillDisk fills the node's disk (Config.DiskSize) with a file of zeros,
// until no byte more fits, and returns how many bytes it wrote.
func (n *Node) FillDisk() (int64, error) {
	if !n.disk {
		return 0, errors.New("cluster: the node's data dir is not a disk of its own")
	}
	f, err := os.OpenFile(filepath.Join(n.DataDir, fillerName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return 0, nil // full already
		}
		return 0, err
	}
	defer func() { _ = f.Close() }()
	var total int64
	buf := make([]byte, 1<<20)
	for _, size := range []int{len(buf), 4096, 1} {
		for {
			k, err := f.Write(buf[:size])
			total += int64(k)
			if err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					return total, err
				}
				break
			}
		}
	}
	return total, nil
}

// FreeDisk removes what FillDisk wrote.
func (n *Node) FreeDisk() error {
	err := os.Remove(filepath.Join(n.DataDir, fillerName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
