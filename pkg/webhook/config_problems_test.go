package webhook

import (
	"errors"
	"strings"
	"testing"
)

// wantProblem is a problem a case expects: its line, field, and a part of its message.
type wantProblem struct {
	line  int
	field string
	msg   string
}

// receiverHead is the first lines of a one-receiver file; the line of its next line is 5.
var receiverHead = []string{
	"receivers:",              // 1
	"  - id: r",               // 2
	"    type: github",        // 3
	"    secrets: [{env: S}]", // 4
}

// withRoute is receiverHead, then routes with one route whose deploy lines follow (from line 9).
func withRoute(deployLines ...string) string {
	lines := append(append([]string{}, receiverHead...),
		"    routes:",                   // 5
		"      - repository: acme/shop", // 6
		"        branches: [main]",      // 7
		"        deploy:",               // 8
	)
	return yamlLines(append(lines, deployLines...)...)
}

func head(more ...string) string {
	return yamlLines(append(append([]string{}, receiverHead...), more...)...)
}

const okRoutes = "    routes: [{repository: a/b, branches: [main], deploy: {cluster: c, namespace: n, release: r}}]"

func TestConfigProblems(t *testing.T) {
	env := map[string]string{"S": "s3cret", "EMPTY": ""}
	tests := []struct {
		name  string
		yaml  string
		files map[string]string
		want  []wantProblem
	}{
		{"empty file", "# nothing\n", nil, []wantProblem{{0, "", "the file is empty"}}},
		{"invalid YAML", "receivers:\n  - id: [\n", nil, []wantProblem{{2, "", "invalid YAML"}}},
		{"unknown top key", "receiver: []\n", nil, []wantProblem{
			{1, "receiver", "unknown key: the keys here are receivers"}, {1, "receivers", "no receivers"}}},
		{"no receivers", "receivers: []\n", nil, []wantProblem{{1, "receivers", "no receivers"}}},
		{"receivers not a list", "receivers: {id: r}\n", nil, []wantProblem{
			{1, "receivers", "is a mapping, want a list"}, {1, "receivers", "no receivers"}}},
		{"missing id, type, secrets, routes", "receivers:\n  - events: [push]\n", nil, []wantProblem{
			{2, "receivers[0].id", "missing"}, {2, "receivers[0].type", "missing: give one of github, gitlab"},
			{2, "receivers[0].secrets", "missing"}, {2, "receivers[0].routes", "no routes"}}},
		{"bad id", yamlLines("receivers:", "  - id: Shop_1", "    type: github", "    secrets: [{env: S}]", okRoutes), nil,
			[]wantProblem{{2, "receivers[0].id", `"Shop_1" is not a valid id`}}},
		{"id too long", yamlLines("receivers:", "  - id: "+strings.Repeat("a", 64), "    type: github", "    secrets: [{env: S}]", okRoutes), nil,
			[]wantProblem{{2, "receivers[0].id", "at most 63"}}},
		{"duplicate id", head(okRoutes, "  - id: r", "    type: gitlab", "    secrets: [{env: S}]", okRoutes), nil,
			[]wantProblem{{6, "receivers[1].id", `"r" is already the id of receivers[0]`}}},
		{"unknown type", yamlLines("receivers:", "  - id: r", "    type: gitea", "    secrets: [{env: S}]", okRoutes), nil,
			[]wantProblem{{3, "receivers[0].type", `unknown type "gitea": use one of github, gitlab, bitbucket, generic-hmac, standard-webhooks, cloudevents`}}},
		{"unknown receiver key", head("    secret: x", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].secret", "unknown key: the keys here are id, type, secrets"}}},
		{"duplicate key", head("    type: gitlab", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].type", "given twice (first on line 3)"}}},
		{"inline secret", yamlLines("receivers:", "  - id: r", "    type: github", "    secrets:", "      - value: hunter2", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].secrets[0].value", "secrets are never written in the configuration"}}},
		{"secret file and env", yamlLines("receivers:", "  - id: r", "    type: github", "    secrets:", "      - {file: s, env: S}", okRoutes),
			map[string]string{"s": "x"}, []wantProblem{{5, "receivers[0].secrets[0]", "both file and env: give one"}}},
		{"secret entry empty", yamlLines("receivers:", "  - id: r", "    type: github", "    secrets:", "      - {}", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].secrets[0]", "empty: give file: PATH or env: NAME"}}},
		{"secret unknown key", yamlLines("receivers:", "  - id: r", "    type: github", "    secrets:", "      - {env: S, vault: x}", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].secrets[0].vault", "unknown key: the keys here are file, env"}}},
		{"secret file missing", yamlLines("receivers:", "  - id: r", "    type: github", "    secrets:", "      - env: S", "      - file: gone.secret", okRoutes), nil,
			[]wantProblem{{6, "receivers[0].secrets[1].file", "gone.secret does not exist"}}},
		{"secret file empty", yamlLines("receivers:", "  - id: r", "    type: github", "    secrets:", "      - file: empty.secret", okRoutes),
			map[string]string{"empty.secret": "\n"}, []wantProblem{{5, "receivers[0].secrets[0].file", "empty.secret is empty"}}},
		{"secret env unset", yamlLines("receivers:", "  - id: r", "    type: github", "    secrets:", "      - env: NOT_SET", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].secrets[0].env", "environment variable NOT_SET is not set"}}},
		{"secret env empty", yamlLines("receivers:", "  - id: r", "    type: github", "    secrets:", "      - env: EMPTY", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].secrets[0].env", "environment variable EMPTY is empty"}}},
		{"three secrets", yamlLines("receivers:", "  - id: r", "    type: github", "    secrets: [{env: S}, {env: S}, {env: S}]", okRoutes), nil,
			[]wantProblem{{4, "receivers[0].secrets", "3 secrets: give one, or two while rotating"}}},
		{"no secrets", yamlLines("receivers:", "  - id: r", "    type: github", "    secrets: []", okRoutes), nil,
			[]wantProblem{{4, "receivers[0].secrets", "missing"}}},
		{"unknown event", head("    events: [push, merge_request]", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].events[1]", `unknown event "merge_request": use push (branches) or tag_push (tags)`}}},
		{"event twice", head("    events: [push, push]", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].events[1]", `"push" is listed twice`}}},
		{"no events", head("    events: []", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].events", "empty: list push and/or tag_push"}}},
		{"maxBodySize not a size", head("    maxBodySize: lots", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].maxBodySize", `"lots" is not a size`}}},
		{"maxBodySize too large", head("    maxBodySize: 26Mi", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].maxBodySize", "26Mi is out of range: give more than 0 and at most 25Mi"}}},
		{"maxBodySize zero", head("    maxBodySize: 0", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].maxBodySize", "out of range"}}},
		{"rateLimit zero", head("    rateLimit: {perMinute: 0, burst: -1}", okRoutes), nil, []wantProblem{
			{5, "receivers[0].rateLimit.perMinute", `"0" is not a positive integer`},
			{5, "receivers[0].rateLimit.burst", `"-1" is not a positive integer`}}},
		{"rateLimit unknown key", head("    rateLimit: {perSecond: 2}", okRoutes), nil,
			[]wantProblem{{5, "receivers[0].rateLimit.perSecond", "unknown key: the keys here are perMinute, burst"}}},
		{"no routes", head("    routes: []"), nil, []wantProblem{{5, "receivers[0].routes", "no routes"}}},
		{"route without branches or tags", head("    routes:", "      - repository: a/b", "        deploy: {cluster: c, namespace: n, release: r}"), nil,
			[]wantProblem{{6, "receivers[0].routes[0]", "neither branches nor tags: the route would match no push"}}},
		{"route empty branches", head("    routes:", "      - repository: a/b", "        branches: []", "        deploy: {cluster: c, namespace: n, release: r}"), nil,
			[]wantProblem{{7, "receivers[0].routes[0].branches", "empty"}}},
		{"route bad glob", head("    routes:", "      - repository: a/b", "        branches: [main]", "        tags: [\"v[\"]", "        deploy: {cluster: c, namespace: n, release: r}"), nil,
			[]wantProblem{{8, "receivers[0].routes[0].tags[0]", `"v[" is not a valid glob`}}},
		{"route bad repository glob", head("    routes:", "      - repository: \"a/[\"", "        branches: [main]", "        deploy: {cluster: c, namespace: n, release: r}"), nil,
			[]wantProblem{{6, "receivers[0].routes[0].repository", `"a/[" is not a valid glob`}}},
		{"route missing repository and deploy", head("    routes:", "      - branches: [main]"), nil, []wantProblem{
			{6, "receivers[0].routes[0].repository", "missing"}, {6, "receivers[0].routes[0].deploy", "missing"}}},
		{"branches on a tag-only receiver", head("    events: [tag_push]", "    routes:", "      - repository: a/b", "        branches: [main]", "        tags: [v*]", "        deploy: {cluster: c, namespace: n, release: r}"), nil,
			[]wantProblem{{8, "receivers[0].routes[0].branches", "the receiver's events leave out push"}}},
		{"tags on a push-only receiver", head("    events: [push]", "    routes:", "      - repository: a/b", "        tags: [v*]", "        deploy: {cluster: c, namespace: n, release: r}"), nil,
			[]wantProblem{{8, "receivers[0].routes[0].tags", "the receiver's events leave out tag_push"}}},
		{"deploy missing fields", withRoute("          env: staging"), nil, []wantProblem{
			{9, "receivers[0].routes[0].deploy.cluster", "missing"},
			{9, "receivers[0].routes[0].deploy.namespace", "missing"},
			{9, "receivers[0].routes[0].deploy.release", "missing"}}},
		{"deploy unknown key", withRoute("          cluster: c", "          namespace: n", "          release: r", "          values: {a: 1}"), nil, []wantProblem{
			{12, "receivers[0].routes[0].deploy.values", "unknown key: the keys here are chart, env, valuesFiles"}}},
		{"rollout with cluster and onQueued", withRoute("          cluster: c", "          namespace: \"{{ .Cluster }}\"", "          release: r", "          onQueued: supersede",
			"          rollout: {clusters: {names: [a]}, waves: [{clusters: [a]}]}"), nil, []wantProblem{
			{9, "receivers[0].routes[0].deploy.cluster", "with rollout the rollout's clusters and waves say where the release goes"},
			{12, "receivers[0].routes[0].deploy.onQueued", "as rollout.onNewRollout says"}}},
		{"rollout problems", withRoute("          namespace: \"app-{{ .Cluster }}-{{ .Branch | slug }}\"", "          release: \"{{ .Labels.app }}\"", "          rollout:",
			"            chart: {path: x}", "            clusters: {selector: \"env in (\"}", "            waves:", "              - {name: Canary, clusters: [a]}",
			"            offlineClusters: {policy: maybe}"), nil, []wantProblem{
			{12, "receivers[0].routes[0].deploy.rollout.chart", "what it deploys (chart) is the route's deploy"},
			{13, "receivers[0].routes[0].deploy.rollout.clusters.selector", "is not a label selector"},
			{15, "receivers[0].routes[0].deploy.rollout.waves[0].name", `"Canary" is not a valid wave name`},
			{16, "receivers[0].routes[0].deploy.rollout.offlineClusters.policy", "maybe"}}},
		{"rollout file and waves", withRoute("          namespace: n", "          release: r", "          rollout: {file: rollout.yaml, waves: []}"), nil, []wantProblem{
			{11, "receivers[0].routes[0].deploy.rollout.waves", "with file the rollout is read from the repository"}}},
		{"rollout file outside", withRoute("          namespace: n", "          release: r", "          rollout: {file: ../rollout.yaml}"), nil, []wantProblem{
			{11, "receivers[0].routes[0].deploy.rollout.file", `has ".."`}}},
		{"cluster fields without a rollout", withRoute("          cluster: c", "          namespace: \"app-{{ .Cluster }}\"", "          release: r"), nil, []wantProblem{
			{10, "receivers[0].routes[0].deploy.namespace", `map has no entry for key "Cluster"`}}},
		{"rollout cluster field in a pipeline", withRoute("          namespace: \"{{ .Cluster | slug }}\"", "          release: r", "          rollout: {file: r.yaml}"), nil, []wantProblem{
			{9, "receivers[0].routes[0].deploy.namespace", "{{ .Cluster }} and {{ .Labels.KEY }}"}}},
		{"rollout name invalid", withRoute("          namespace: App_NS", "          release: r", "          rollout: {file: r.yaml}"), nil, []wantProblem{
			{9, "receivers[0].routes[0].deploy.namespace", `"App_NS" is not a valid namespace name`}}},
		{"invalid static names", withRoute("          cluster: c", "          namespace: Shop_NS", "          release: "+strings.Repeat("r", 54)), nil, []wantProblem{
			{10, "receivers[0].routes[0].deploy.namespace", `"Shop_NS" is not a valid namespace name`},
			{11, "receivers[0].routes[0].deploy.release", "is not a valid release name: use lower-case letters, digits and '-' (at most 53 characters)"}}},
		{"template unknown field", withRoute("          cluster: c", "          namespace: \"review-{{ .Brnch | slug }}\"", "          release: r"), nil,
			[]wantProblem{{10, "receivers[0].routes[0].deploy.namespace", `template "review-{{ .Brnch | slug }}": at <.Brnch>: map has no entry for key "Brnch" (the fields are .Commit .ShortCommit`}}},
		{"template syntax", withRoute("          cluster: c", "          namespace: n", "          release: \"{{ .Branch \""), nil,
			[]wantProblem{{11, "receivers[0].routes[0].deploy.release", "unclosed action"}}},
		{"template unknown function", withRoute("          cluster: c", "          namespace: n", "          release: r", "          set: [\"a={{ .Branch | upper }}\"]"), nil,
			[]wantProblem{{12, "receivers[0].routes[0].deploy.set[0]", `function "upper" not defined`}}},
		{"set not key=value", withRoute("          cluster: c", "          namespace: n", "          release: r", "          setString: [\"{{ .Tag }}\", \"=x\"]"), nil, []wantProblem{
			{12, "receivers[0].routes[0].deploy.setString[0]", "is not key=value"},
			{12, "receivers[0].routes[0].deploy.setString[1]", "is not key=value"}}},
		{"bad paths", withRoute("          cluster: c", "          namespace: n", "          release: r", "          chart: {path: ../charts}", "          valuesFiles: [/etc/values.yaml, \"a/../../b.yaml\", \"\"]"), nil, []wantProblem{
			{12, "receivers[0].routes[0].deploy.chart.path", `"../charts" has ".."`},
			{13, "receivers[0].routes[0].deploy.valuesFiles[0]", `"/etc/values.yaml" is absolute`},
			{13, "receivers[0].routes[0].deploy.valuesFiles[1]", `has ".."`},
			{13, "receivers[0].routes[0].deploy.valuesFiles[2]", "empty"}}},
		{"chart repository URLs", withRoute("          cluster: c", "          namespace: n", "          release: r", "          chart: {repository: \"https://bob:pw@git.example.com/c.git\"}"), nil,
			[]wantProblem{{12, "receivers[0].routes[0].deploy.chart.repository", "holds a password"}}},
		{"chart repository not a URL", withRoute("          cluster: c", "          namespace: n", "          release: r", "          chart:", "            repository: charts", "            path: x"), nil,
			[]wantProblem{{13, "receivers[0].routes[0].deploy.chart.repository", `"charts" is not a repository URL`}}},
		{"chart repository scheme", withRoute("          cluster: c", "          namespace: n", "          release: r", "          chart: {repository: \"ftp://h/c\"}"), nil,
			[]wantProblem{{12, "receivers[0].routes[0].deploy.chart.repository", "has scheme ftp"}}},
		{"timeout and onQueued", withRoute("          cluster: c", "          namespace: n", "          release: r", "          timeout: 10", "          onQueued: replace"), nil, []wantProblem{
			{12, "receivers[0].routes[0].deploy.timeout", `"10" is not a positive duration`},
			{13, "receivers[0].routes[0].deploy.onQueued", `unknown policy "replace": use queue`}}},
		{"list given as a string", withRoute("          cluster: c", "          namespace: n", "          release: r", "          valuesFiles: values.yaml"), nil,
			[]wantProblem{{12, "receivers[0].routes[0].deploy.valuesFiles", "is a string, want a list: [values.yaml]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"webhooks.yaml": tt.yaml}
			for k, v := range tt.files {
				files[k] = v
			}
			path := writeFiles(t, files)
			_, err := LoadConfig(path, envOf(env))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ConfigError", err)
			}
			if ce.File != path {
				t.Errorf("File = %q, want %q", ce.File, path)
			}
			if len(ce.Problems) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(ce.Problems), len(tt.want), err)
			}
			for i, w := range tt.want {
				p := ce.Problems[i]
				if p.Line != w.line || p.Field != w.field || !strings.Contains(p.Message, w.msg) {
					t.Errorf("problem %d = %d %s: %s\nwant      %d %s: ...%s...", i, p.Line, p.Field, p.Message, w.line, w.field, w.msg)
				}
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, path+":") {
					t.Errorf("error line %q does not start with the file", line)
				}
			}
		})
	}
}

// TestConfigProblemsNeverQuoteSecrets checks that secret problems name the source, not the value.
func TestConfigProblemsNeverQuoteSecrets(t *testing.T) {
	path := writeFiles(t, map[string]string{
		"webhooks.yaml": yamlLines("receivers:", "  - id: r", "    type: nope", "    secrets: [{file: s}, {env: S}]", okRoutes),
		"s":             "file-s3cret\n",
	})
	_, err := LoadConfig(path, envOf(map[string]string{"S": "env-s3cret"}))
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("err = %v", err)
	}
}
