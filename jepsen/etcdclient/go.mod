module github.com/lockd/lockd/jepsen/etcdclient

go 1.26.8

// The same replace as lockd's own go.mod: raft v1.8.0 requires go-metrics
// v0.7.0, which removed the compat package raft-boltdb/v2 v2.3.1 imports.
replace github.com/hashicorp/go-metrics => github.com/hashicorp/go-metrics v0.6.1

// hashicorp/raft v1.8.0 with lockd's patch (parallel leader append, off by
// default); third_party/raft/README.lockd.md says what changed and why.
replace github.com/hashicorp/raft => ../../third_party/raft

replace github.com/lockd/lockd => ../..

require (
	github.com/lockd/lockd v0.0.0
	go.etcd.io/etcd/api/v3 v3.6.16
	go.etcd.io/etcd/client/v3 v3.6.16
	go.uber.org/zap v1.27.0
)

require (
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/coreos/go-systemd/v22 v22.5.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.29.0 // indirect
	go.etcd.io/etcd/client/pkg/v3 v3.6.16 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
