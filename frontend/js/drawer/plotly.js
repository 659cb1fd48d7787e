// Plotly, which draws the drawer's charts and the Overview's: the file shipped in the installed plotly package,
// loaded the first time a chart is drawn (a post-mortem has it inlined), and the layout the drawer's charts share.

let plotlyPromise = null;

export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotlyPromise) {
    plotlyPromise = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = "/vendor/plotly.min.js";
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => reject(new Error("could not load plotly.min.js"));
      document.head.appendChild(s);
    });
  }
  return plotlyPromise;
}

export const LAYOUT = {
  margin: { l: 46, r: 150, t: 26, b: 30 },
  font: { size: 11, family: "system-ui, sans-serif", color: "#1f2733" },
  paper_bgcolor: "rgba(0,0,0,0)",
  plot_bgcolor: "#fbfcfd",
  showlegend: true,
  legend: { orientation: "v", x: 1.01, xanchor: "left", y: 1, font: { size: 10 } },
  xaxis: { gridcolor: "#e8ebef", zeroline: false },
  yaxis: { gridcolor: "#e8ebef", zeroline: false },
};
export const CONFIG = { displayModeBar: false, responsive: true };
