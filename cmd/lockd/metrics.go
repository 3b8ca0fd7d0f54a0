package main

import (
	"time"

	gometrics "github.com/hashicorp/go-metrics"
	gmprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// newMetrics returns the registry a node serves at /metrics: the Go
// runtime's and the process's collectors, and hashicorp/raft's own
// metrics (commit and apply times, replication, ...), which raft sends to
// the process-wide go-metrics sink, bridged into the same registry with
// the names raft gives them (lockd_raft_...). The node and its HTTP API
// add theirs when it starts.
func newMetrics() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
		Registerer: reg,
		// A series raft stops updating (a peer that left) goes away.
		Expiration: 10 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	conf := gometrics.DefaultConfig("lockd")
	conf.EnableHostname = false
	conf.EnableHostnameLabel = false
	conf.EnableRuntimeMetrics = false // the Go collector has them
	conf.EnableServiceLabel = false
	if _, err := gometrics.NewGlobal(conf, sink); err != nil {
		return nil, err
	}
	return reg, nil
}
