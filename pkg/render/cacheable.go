package render

import (
	"encoding/json"
	"fmt"
	"regexp"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/sealane/sealane/pkg/chart"
)

// perTargetFunc matches the template functions whose result is not a function of a render's
// KeyInput: lookup reads the target cluster; the random, key-generating, salting and clock
// functions give another result on every call; getHostByName asks DNS. A chart that calls one
// is rendered for each target, never shared. The match is on words anywhere in the text
// (comments and strings included): a false match only costs a render.
var perTargetFunc = regexp.MustCompile(`\b(lookup|rand[A-Z][A-Za-z]*|shuffle|uuidv4|gen[A-Z][A-Za-z]*|bcrypt|htpasswd|encryptAES|now|ago|getHostByName)\b`)

// tplFunc matches the tpl function, which renders text from values and files as a template.
var tplFunc = regexp.MustCompile(`\btpl\b`)

// Cacheable says whether one render of ch with inputs may serve every target with the same
// KeyInput; when not, reason says why (naming the file, never a value). A chart is not
// cacheable when a template calls a per-target function, or when it calls tpl and one of the
// texts tpl may render (values, files, the inputs) does — or is encrypted and cannot be read.
func Cacheable(ch *helmchart.Chart, inputs chart.Inputs) (ok bool, reason string) {
	return CheckChart(ch).Cacheable(inputs)
}

// ChartVerdict is what Cacheable finds in a chart alone: a function of the chart, to be kept
// by chart digest (scanning a big chart's templates costs milliseconds).
type ChartVerdict struct {
	// Reason is why the chart is never cacheable, "" when it may be.
	Reason string
	// UsesTpl: a template calls tpl, so the inputs are looked through too.
	UsesTpl bool
}

// CheckChart looks through ch and its subcharts for Cacheable.
func CheckChart(ch *helmchart.Chart) ChartVerdict {
	if ch == nil {
		return ChartVerdict{Reason: "no chart"}
	}
	why, usesTpl := scanTemplates(ch)
	if why == "" && usesTpl {
		why = scanTplSources(ch)
	}
	return ChartVerdict{Reason: why, UsesTpl: usesTpl}
}

// Cacheable is Cacheable of the chart v was found for, with inputs.
func (v ChartVerdict) Cacheable(inputs chart.Inputs) (ok bool, reason string) {
	if v.Reason != "" {
		return false, v.Reason
	}
	if !v.UsesTpl {
		return true, ""
	}
	if len(inputs.SecretValuesFiles) > 0 {
		return false, "the chart calls tpl and the secret values files cannot be read before decryption"
	}
	for _, f := range inputs.ValuesFiles {
		if fn := perTargetFunc.Find(f.Content); fn != nil {
			return false, fmt.Sprintf("the chart calls tpl and values file %s mentions %s", f.Name, fn)
		}
	}
	for _, f := range inputs.SetFile {
		if fn := perTargetFunc.Find(f.Content); fn != nil {
			return false, fmt.Sprintf("the chart calls tpl and --set-file %s mentions %s", f.Key, fn)
		}
	}
	for _, list := range [][]string{inputs.Set, inputs.SetString, inputs.SetJSON, inputs.SetLiteral} {
		for _, s := range list {
			if fn := perTargetFunc.FindString(s); fn != "" {
				return false, fmt.Sprintf("the chart calls tpl and a --set value mentions %s", fn)
			}
		}
	}
	return true, ""
}

// scanTemplates looks through the templates of ch and its subcharts: the first per-target
// call as a reason, and whether any template calls tpl.
func scanTemplates(ch *helmchart.Chart) (reason string, usesTpl bool) {
	for _, t := range ch.Templates {
		if fn := perTargetFunc.Find(t.Data); fn != nil {
			return fmt.Sprintf("%s/%s calls %s", ch.Name(), t.Name, fn), false
		}
		usesTpl = usesTpl || tplFunc.Match(t.Data)
	}
	for _, d := range ch.Dependencies() {
		why, tpl := scanTemplates(d)
		if why != "" {
			return why, false
		}
		usesTpl = usesTpl || tpl
	}
	return "", usesTpl
}

// scanTplSources looks through what tpl may be given from a chart and its subcharts: their
// values and files. Encrypted ones (secret-values.yaml, secret/) cannot be looked through.
func scanTplSources(ch *helmchart.Chart) string {
	if _, ok := chart.SecretValuesFile(ch); ok || len(chart.EncryptedSecretFiles(ch)) > 0 {
		return fmt.Sprintf("%s calls tpl and has encrypted values or files that cannot be read before decryption", ch.Name())
	}
	values, err := json.Marshal(ch.Values)
	if err != nil {
		return fmt.Sprintf("%s calls tpl and its values cannot be read: %v", ch.Name(), err)
	}
	if fn := perTargetFunc.Find(values); fn != nil {
		return fmt.Sprintf("%s calls tpl and its values mention %s", ch.Name(), fn)
	}
	for _, f := range ch.Files {
		if fn := perTargetFunc.Find(f.Data); fn != nil {
			return fmt.Sprintf("%s calls tpl and its file %s mentions %s", ch.Name(), f.Name, fn)
		}
	}
	for _, d := range ch.Dependencies() {
		if why := scanTplSources(d); why != "" {
			return why
		}
	}
	return ""
}
