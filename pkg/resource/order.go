package resource

import (
	"slices"
	"sort"

	"helm.sh/helm/v3/pkg/releaseutil"

	"github.com/sealane/sealane/pkg/manifest"
)

// installOrder is Helm v3's releaseutil.InstallOrder followed by the webhook configurations
// Helm 4 appends to it.
var installOrder = append(slices.Clone([]string(releaseutil.InstallOrder)),
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")

var kindRank = func() map[string]int {
	m := make(map[string]int, len(installOrder))
	for i, k := range installOrder {
		m[k] = i
	}
	return m
}()

// UnknownKindOrder is what KindOrder returns for kinds Helm's install order does not list
// (custom resources and newer built-ins); they go after all known kinds.
var UnknownKindOrder = len(installOrder)

// KindOrder returns kind's rank in Helm's install order (0 = first), or UnknownKindOrder.
func KindOrder(kind string) int {
	if r, ok := kindRank[kind]; ok {
		return r
	}
	return UnknownKindOrder
}

// SortForInstall orders objs as Helm installs them: by KindOrder, unknown kinds last and
// alphabetically by kind. The sort is stable, so objects of one kind keep their input order
// (Helm's: by template path, then position in the template).
func SortForInstall(objs []manifest.Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i].Obj.GetKind(), objs[j].Obj.GetKind()
		ra, rb := KindOrder(a), KindOrder(b)
		if ra != rb {
			return ra < rb
		}
		return ra == UnknownKindOrder && a < b
	})
}
