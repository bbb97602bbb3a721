package main

import (
	"github.com/spf13/pflag"

	"github.com/sealane/sealane/pkg/serve"
)

// registerPoolFlags adds serve's --clusters and --pool (regional stage pools, pkg/serve/pools.go).
func registerPoolFlags(fl *pflag.FlagSet, o *serve.PoolOptions) {
	fl.StringVar(&o.Selector, "clusters", o.Selector, serve.PoolFlagUsage.Clusters)
	fl.StringVar(&o.Name, "pool", o.Name, serve.PoolFlagUsage.Pool)
}
