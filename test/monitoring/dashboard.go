package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Dashboard is the part of a Grafana dashboard (files/dashboard.json) the checks read.
type Dashboard struct {
	Title      string     `json:"title"`
	UID        string     `json:"uid"`
	Panels     []Panel    `json:"panels"`
	Templating Templating `json:"templating"`
}

// Panel is one dashboard panel.
type Panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *Datasource `json:"datasource"`
	GridPos    *GridPos    `json:"gridPos"`
	Targets    []Target    `json:"targets"`
}

// Datasource names a panel's or target's data source.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// GridPos is where a panel sits on the dashboard's 24-column grid.
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// Target is one query of a panel.
type Target struct {
	RefID        string      `json:"refId"`
	Expr         string      `json:"expr"`
	LegendFormat string      `json:"legendFormat"`
	Datasource   *Datasource `json:"datasource"`
}

// Templating holds the dashboard's variables.
type Templating struct {
	List []Variable `json:"list"`
}

// Variable is one dashboard variable.
type Variable struct {
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	Query      any         `json:"query"`
	Definition string      `json:"definition"`
	Datasource *Datasource `json:"datasource"`
}

// ReadDashboard reads files/dashboard.json of chartDir.
func ReadDashboard(chartDir string) (Dashboard, error) {
	var d Dashboard
	data, err := os.ReadFile(filepath.Join(chartDir, DashboardFile))
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("%s: %w", DashboardFile, err)
	}
	return d, nil
}
