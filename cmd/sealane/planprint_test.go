package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/diff"
	"github.com/sealane/sealane/pkg/golden"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/plan"
)

// TestPrintPlan checks the text of `sealane plan` against a golden file: the plan summary,
// the list of changes with their notes, the diffs with reasons, drift and problems, and the
// counts.
func TestPrintPlan(t *testing.T) {
	objs, err := manifest.Parse(`---
# Source: demo/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
---
# Source: demo/templates/job.yaml
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
---
# Source: demo/templates/hook.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: hook, annotations: {helm.sh/hook: post-upgrade}}
`)
	if err != nil {
		t.Fatal(err)
	}
	previous, err := manifest.Parse("apiVersion: v1\nkind: Secret\nmetadata: {name: old}\n")
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(plan.Input{Kind: plan.Upgrade, Release: "demo", Namespace: "shop", Objects: objs, Previous: previous})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(kind, name string) manifest.Ref {
		return manifest.Ref{APIVersion: "v1", Kind: kind, Namespace: "shop", Name: name}
	}
	changes := []diff.Change{
		{Ref: ref("ConfigMap", "cfg"), Source: "demo/templates/cm.yaml", Type: diff.Update, Drift: true,
			Diff:      "--- live\n+++ planned\n@@ -1 +1 @@\n-a: edited\n+a: \"1\"\n",
			DriftDiff: "--- live\n+++ last applied\n@@ -1 +1 @@\n-a: edited\n+a: \"1\"\n"},
		{Ref: manifest.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: "shop", Name: "migrate"}, Source: "demo/templates/job.yaml",
			Type: diff.Recreate, Reason: "immutable field spec.template changes",
			Diff: "--- live\n+++ planned\n@@ -1 +1 @@\n-image: busybox:1\n+image: busybox:2\n"},
		{Ref: ref("ConfigMap", "hook"), Source: "demo/templates/hook.yaml", Type: diff.Recreate, Hook: true,
			Reason: "delete policy before-creation: deleted and created again on every deploy"},
		{Ref: ref("ConfigMap", "theirs"), Type: diff.Update, Problem: `object exists and belongs to release "other" (namespace "x"), not to release "demo"`},
		{Ref: ref("ConfigMap", "same"), Type: diff.Unchanged},
		{Ref: ref("Secret", "old"), Type: diff.Delete, Diff: "--- live\n+++ deleted\n@@ -1 +0,0 @@\n-data: {a: '<sensitive: sha256:1a2b3c4d>'}\n"},
		{Ref: ref("Secret", "kept"), Type: diff.Unchanged, Reason: "kept: helm.sh/resource-policy: keep"},
	}
	var b strings.Builder
	if err := printPlan(&b, &pipeline.PlanReport{Plan: p, Deployed: 4, Changes: changes, NamespaceMissing: true}); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "plan-print.golden"), b.String())

	// The rules the golden file must follow, stated by hand (a wrong golden file cannot be
	// regenerated into truth): Helm's upgrade order — apply, then delete what the chart
	// dropped, then post-upgrade hooks; the counts of the change list (Namespace: create; cfg,
	// theirs: update; migrate, hook: recreate; old: delete; same, kept: unchanged; cfg drifted);
	// secret data only as its masked digest.
	out := b.String()
	order := []string{"phase 1 [main]", "apply            shop/ConfigMap/cfg", "phase 2 [cleanup]", "delete           shop/Secret/old",
		"phase 3 [post]", "recreate         shop/ConfigMap/hook  (hook post-upgrade)"}
	at := 0
	for _, want := range order {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("plan text lacks %q after position %d (order: %q)", want, at, order)
		}
		at += i + len(want)
	}
	for _, want := range []string{
		"3 resources to deploy, 1 resource to delete, 0 resources kept",
		"planned changes: 1 create, 2 update, 2 recreate, 1 delete, 2 unchanged; 1 drifted",
		"update    shop/ConfigMap/cfg  (DRIFTED)", "update    shop/ConfigMap/theirs  (WOULD FAIL)",
		"-data: {a: '<sensitive: sha256:1a2b3c4d>'}",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan text lacks %q", want)
		}
	}
}
