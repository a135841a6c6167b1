//! `hlojit graph`: the fused graph of a module after hlojit's HLO passes as a picture.
//! Kernels are boxes coloured by kind (loop fusion, reduction fusion, GEMM/convolution,
//! other kernels, custom calls), edges carry the shape that flows along them, and the
//! bodies of while loops and conditionals are clusters of their own.
//!
//! The picture is laid out by Graphviz (`dot`) when it is installed: `.svg` output needs it,
//! `.dot` writes the Graphviz source, and `.html` embeds Graphviz's SVG or, without Graphviz,
//! a simple layered layout drawn here, so the page is self-contained either way.

use hlojit_compiler::analysis::cost::kernel_cost;
use hlojit_compiler::hlo::{CompId, Computation, FusionKind, InstrId, Module, Opcode};
use hlojit_runtime::Shape;
use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

/// What a node is, which decides its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Parameter,
    Constant,
    /// Tuples, get-tuple-element, aliasing bitcasts: no code runs.
    Plumbing,
    LoopFusion,
    ReductionFusion,
    /// Dots, convolutions and fusions around them.
    Gemm,
    /// Any other kernel (an unfused op: sort, gather, transpose, ...).
    Kernel,
    CustomCall,
    Control,
    Collective,
}

impl Kind {
    fn colour(self) -> &'static str {
        match self {
            Kind::Parameter => "#e0e0e0",
            Kind::Constant => "#f2f2f2",
            Kind::Plumbing => "#ffffff",
            Kind::LoopFusion => "#9ecae1",
            Kind::ReductionFusion => "#a1d99b",
            Kind::Gemm => "#fdae6b",
            Kind::Kernel => "#fee391",
            Kind::CustomCall => "#bcbddc",
            Kind::Control => "#fcbba1",
            Kind::Collective => "#c7e9c0",
        }
    }

    fn legend(self) -> &'static str {
        match self {
            Kind::Parameter => "parameter",
            Kind::Constant => "constant",
            Kind::Plumbing => "tuple / view",
            Kind::LoopFusion => "loop fusion",
            Kind::ReductionFusion => "reduction fusion",
            Kind::Gemm => "dot / convolution",
            Kind::Kernel => "other kernel",
            Kind::CustomCall => "custom call",
            Kind::Control => "while / conditional / call",
            Kind::Collective => "collective",
        }
    }

    const ALL: [Kind; 10] = [
        Kind::Parameter,
        Kind::Constant,
        Kind::Plumbing,
        Kind::LoopFusion,
        Kind::ReductionFusion,
        Kind::Gemm,
        Kind::Kernel,
        Kind::CustomCall,
        Kind::Control,
        Kind::Collective,
    ];
}

/// One box.
pub struct Node {
    pub id: String,
    pub kind: Kind,
    /// Lines of the label: the name, then what it computes.
    pub label: Vec<String>,
}

/// One computation's nodes and edges, and the clusters of the computations it runs.
pub struct Cluster {
    pub title: String,
    pub nodes: Vec<Node>,
    /// (from, to, label)
    pub edges: Vec<(String, String, String)>,
    pub children: Vec<Cluster>,
}

fn node_id(c: CompId, i: InstrId) -> String {
    format!("c{}_{}", c.0, i.0)
}

/// `f32[512,512]`, without the layout; tuples as `(f32[2], s32[])`.
pub fn short_shape(shape: &Shape) -> String {
    match shape {
        Shape::Tuple(elements) if elements.len() > 3 => format!("({} elements)", elements.len()),
        Shape::Tuple(elements) => format!("({})", elements.iter().map(short_shape).collect::<Vec<_>>().join(", ")),
        other => match other.as_array() {
            Some(a) => format!("{}[{}]", a.element_type, a.dims.iter().map(i64::to_string).collect::<Vec<_>>().join(",")),
            None => other.to_string(),
        },
    }
}

fn kind_of(module: &Module, comp: &Computation, id: InstrId) -> Kind {
    let inst = comp.get(id);
    let ops = kernel_cost(module, comp, inst).ops;
    match inst.opcode {
        Opcode::Parameter => Kind::Parameter,
        Opcode::Constant | Opcode::Iota if inst.shape.array_leaves().iter().all(|a| a.dims.is_empty()) => Kind::Constant,
        Opcode::Constant => Kind::Constant,
        Opcode::Tuple | Opcode::GetTupleElement | Opcode::Bitcast | Opcode::AfterAll | Opcode::OptimizationBarrier => Kind::Plumbing,
        Opcode::While | Opcode::Conditional | Opcode::Call => Kind::Control,
        Opcode::CustomCall => Kind::CustomCall,
        op if op.is_collective() => Kind::Collective,
        _ if ops.iter().any(|o| matches!(o, Opcode::Dot | Opcode::Convolution)) => Kind::Gemm,
        Opcode::Fusion if inst.attrs.fusion_kind == Some(FusionKind::Input) || ops.contains(&Opcode::Reduce) => Kind::ReductionFusion,
        Opcode::Fusion => Kind::LoopFusion,
        Opcode::Reduce | Opcode::ReduceWindow => Kind::ReductionFusion,
        _ => Kind::Kernel,
    }
}

/// Wraps a list of words into lines of at most `width` characters.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(l) if l.len() + 1 + word.len() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// The graph of computation `c` and, as clusters, of what its instructions run.
pub fn cluster(module: &Module, c: CompId, title: String) -> Cluster {
    let comp = module.computation(c);
    let mut out = Cluster { title, nodes: Vec::new(), edges: Vec::new(), children: Vec::new() };
    for id in comp.post_order() {
        let inst = comp.get(id);
        let kind = kind_of(module, comp, id);
        let mut label = vec![inst.name.clone()];
        match kind {
            Kind::LoopFusion | Kind::ReductionFusion | Kind::Gemm | Kind::Kernel if inst.opcode == Opcode::Fusion => {
                label.extend(wrap(&kernel_cost(module, comp, inst).ops_text(), 36));
            }
            Kind::Parameter | Kind::Constant => label.push(short_shape(&inst.shape)),
            _ if inst.opcode.name() != inst.name => label.push(inst.opcode.name().to_string()),
            _ => {}
        }
        out.nodes.push(Node { id: node_id(c, id), kind, label });
        for &o in &inst.operands {
            out.edges.push((node_id(c, o), node_id(c, id), short_shape(&comp.get(o).shape)));
        }
        let called: Vec<(CompId, String)> = match inst.opcode {
            Opcode::While => inst
                .while_condition()
                .map(|cc| (cc, "condition"))
                .into_iter()
                .chain(inst.while_body().map(|b| (b, "body")))
                .map(|(cc, role)| (cc, format!("{role} of {}: {}", inst.name, module.computation(cc).name)))
                .collect(),
            Opcode::Conditional => inst.called.iter().enumerate().map(|(k, &cc)| (cc, format!("branch {k} of {}: {}", inst.name, module.computation(cc).name))).collect(),
            Opcode::Call => inst.called.iter().map(|&cc| (cc, format!("called by {}: {}", inst.name, module.computation(cc).name))).collect(),
            _ => Vec::new(),
        };
        for (cc, title) in called {
            let child = cluster(module, cc, title);
            let root = node_id(cc, module.computation(cc).root);
            out.edges.push((node_id(c, id), root, String::new()));
            out.children.push(child);
        }
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Graphviz source.
pub fn to_dot(top: &Cluster, name: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"{}\" {{", escape(name));
    let _ = writeln!(out, "  rankdir=TB; compound=true; fontname=\"Helvetica\"; label=\"{}\"; labelloc=t;", escape(name));
    let _ = writeln!(out, "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];");
    let _ = writeln!(out, "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];");
    fn body(out: &mut String, c: &Cluster, depth: usize) {
        let pad = "  ".repeat(depth);
        for n in &c.nodes {
            let label = n.label.iter().map(|l| escape(l)).collect::<Vec<_>>().join("\\n");
            let shape = match n.kind {
                Kind::Parameter => ", shape=ellipse",
                Kind::Plumbing | Kind::Constant => ", fontsize=8",
                _ => "",
            };
            let _ = writeln!(out, "{pad}{} [label=\"{label}\", fillcolor=\"{}\"{shape}];", n.id, n.kind.colour());
        }
        for (i, child) in c.children.iter().enumerate() {
            let _ = writeln!(out, "{pad}subgraph cluster_{}_{i} {{", c.nodes.first().map_or("x", |n| n.id.as_str()));
            let _ = writeln!(out, "{pad}  label=\"{}\"; style=\"rounded,dashed\"; color=\"#999999\"; fontsize=10;", escape(&child.title));
            body(out, child, depth + 1);
            let _ = writeln!(out, "{pad}}}");
        }
        for (from, to, label) in &c.edges {
            if label.is_empty() {
                let _ = writeln!(out, "{pad}{from} -> {to} [style=dashed, arrowhead=none];");
            } else {
                let _ = writeln!(out, "{pad}{from} -> {to} [label=\"{}\"];", escape(label));
            }
        }
    }
    body(&mut out, top, 1);
    // The legend: one box per kind, in a row at the bottom.
    let _ = writeln!(out, "  subgraph cluster_legend {{ label=\"kinds\"; style=dashed; color=\"#bbbbbb\";");
    for k in Kind::ALL {
        let _ = writeln!(out, "    legend_{k:?} [label=\"{}\", fillcolor=\"{}\", fontsize=8];", k.legend(), k.colour());
    }
    let _ = writeln!(out, "  }}\n}}");
    out
}

/// Runs Graphviz's `dot` on the source; `None` when `dot` is not installed.
pub fn graphviz_svg(dot_source: &str) -> Option<Result<String, String>> {
    use std::io::Write as _;
    let mut child = match std::process::Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(Err(format!("cannot run dot: {e}"))),
    };
    let mut stdin = child.stdin.take()?;
    let source = dot_source.to_string();
    // Written from another thread: dot starts writing before it has read everything.
    let writer = std::thread::spawn(move || stdin.write_all(source.as_bytes()));
    let out = match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => return Some(Err(format!("dot: {e}"))),
    };
    let _ = writer.join();
    if !out.status.success() {
        return Some(Err(format!("dot failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    Some(Ok(String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// A layered drawing without Graphviz: each node at the depth of its longest path from a
/// source, clusters stacked below their computation. Good enough to read a small graph.
pub fn simple_svg(top: &Cluster, name: &str) -> String {
    const W: f64 = 230.0;
    const LINE: f64 = 13.0;
    const GAP_X: f64 = 20.0;
    const GAP_Y: f64 = 46.0;
    let mut boxes: Vec<String> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    let mut position: HashMap<String, (f64, f64, f64)> = HashMap::new(); // id -> (x, y, height)
    let mut all_edges: Vec<(String, String, String)> = Vec::new();
    let mut width: f64 = 400.0;

    fn place(
        c: &Cluster,
        x0: f64,
        y0: f64,
        boxes: &mut Vec<String>,
        position: &mut HashMap<String, (f64, f64, f64)>,
        all_edges: &mut Vec<(String, String, String)>,
        width: &mut f64,
    ) -> f64 {
        let index: HashMap<&str, usize> = c.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
        let mut depth = vec![0usize; c.nodes.len()];
        // Nodes come in post order, so operands are placed before their users.
        for (from, to, _) in &c.edges {
            if let (Some(&f), Some(&t)) = (index.get(from.as_str()), index.get(to.as_str())) {
                depth[t] = depth[t].max(depth[f] + 1);
            }
        }
        let layers = depth.iter().copied().max().map_or(0, |d| d + 1);
        let mut y = y0 + 24.0;
        for layer in 0..layers {
            let mut x = x0;
            let mut tallest: f64 = 0.0;
            for (i, n) in c.nodes.iter().enumerate().filter(|(i, _)| depth[*i] == layer) {
                let _ = i;
                let h = 8.0 + LINE * n.label.len() as f64;
                position.insert(n.id.clone(), (x, y, h));
                let mut text = String::new();
                for (k, l) in n.label.iter().enumerate() {
                    let weight = if k == 0 { " font-weight=\"bold\"" } else { "" };
                    let _ = write!(text, "<text x=\"{:.0}\" y=\"{:.0}\"{weight}>{}</text>", x + 6.0, y + 14.0 + LINE * k as f64, escape(l));
                }
                boxes.push(format!(
                    "<g><title>{}</title><rect x=\"{x:.0}\" y=\"{y:.0}\" width=\"{W}\" height=\"{h:.0}\" rx=\"5\" fill=\"{}\" stroke=\"#666\"/>{text}</g>",
                    escape(&n.label.join("\n")),
                    n.kind.colour()
                ));
                x += W + GAP_X;
                tallest = tallest.max(h);
            }
            *width = width.max(x);
            y += tallest + GAP_Y;
        }
        all_edges.extend(c.edges.iter().cloned());
        for child in &c.children {
            let top = y;
            y = place(child, x0 + 20.0, y, boxes, position, all_edges, width) + 10.0;
            boxes.push(format!(
                "<rect x=\"{:.0}\" y=\"{top:.0}\" width=\"{:.0}\" height=\"{:.0}\" fill=\"none\" stroke=\"#999\" stroke-dasharray=\"4\"/><text x=\"{:.0}\" y=\"{:.0}\" font-style=\"italic\">{}</text>",
                x0 + 10.0,
                *width - x0,
                y - top - 5.0,
                x0 + 16.0,
                top + 16.0,
                escape(&child.title)
            ));
        }
        y
    }
    let height = place(top, 10.0, 20.0, &mut boxes, &mut position, &mut all_edges, &mut width) + 10.0;
    for (from, to, label) in &all_edges {
        if let (Some(&(x1, y1, h1)), Some(&(x2, y2, _))) = (position.get(from), position.get(to)) {
            let (ax, ay, bx, by) = (x1 + W / 2.0, y1 + h1, x2 + W / 2.0, y2);
            let dash = if label.is_empty() { " stroke-dasharray=\"3\"" } else { "" };
            lines.push(format!("<line x1=\"{ax:.0}\" y1=\"{ay:.0}\" x2=\"{bx:.0}\" y2=\"{by:.0}\" stroke=\"#777\" marker-end=\"url(#arrow)\"{dash}/>"));
            if !label.is_empty() {
                lines.push(format!("<text x=\"{:.0}\" y=\"{:.0}\" class=\"edge\">{}</text>", (ax + bx) / 2.0 + 3.0, (ay + by) / 2.0, escape(label)));
            }
        }
    }
    let legend: String = Kind::ALL
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let x = 10.0 + 130.0 * i as f64;
            format!("<rect x=\"{x}\" y=\"{height}\" width=\"120\" height=\"18\" fill=\"{}\" stroke=\"#666\"/><text x=\"{}\" y=\"{}\">{}</text>", k.colour(), x + 4.0, height + 13.0, k.legend())
        })
        .collect();
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{:.0}\" font-family=\"Helvetica, sans-serif\" font-size=\"10\">\
<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#777\"/></marker>\
<style>.edge {{ font-size: 8px; fill: #444; }}</style></defs>\
<text x=\"10\" y=\"14\" font-size=\"13\" font-weight=\"bold\">{}</text>{}{}{}</svg>\n",
        width.max(10.0 + 130.0 * Kind::ALL.len() as f64) + 10.0,
        height + 30.0,
        escape(name),
        lines.join(""),
        boxes.join(""),
        legend
    )
}

/// A self-contained page around an SVG.
fn html(svg: &str, name: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\
<style>body {{ font-family: sans-serif; margin: 1em; }} svg {{ max-width: none; }}</style></head>\
<body>\n{}\n</body></html>\n",
        escape(name),
        svg.trim_start_matches(|c| c != '<').split_once("<svg").map_or(svg.to_string(), |(_, rest)| format!("<svg{rest}"))
    )
}

/// Writes the graph of a prepared module to `output` (`.svg`, `.html` or `.dot`); returns
/// how it was drawn.
pub fn write(module: &Module, output: &Path) -> Result<&'static str, String> {
    let top = cluster(module, module.entry, format!("ENTRY {}", module.entry_computation().name));
    let dot = to_dot(&top, &module.name);
    let ext = output.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let (contents, how) = match ext.as_str() {
        "dot" | "gv" => (dot, "Graphviz source"),
        "svg" => match graphviz_svg(&dot) {
            Some(svg) => (svg?, "SVG laid out by Graphviz"),
            None => return Err("writing .svg needs Graphviz's `dot` (apt-get install graphviz, or `cargo xtask setup`); write .html for a page drawn without it".into()),
        },
        "html" | "htm" => match graphviz_svg(&dot) {
            Some(svg) => (html(&svg?, &module.name), "HTML page with Graphviz's SVG"),
            None => (html(&simple_svg(&top, &module.name), &module.name), "HTML page (Graphviz not installed: simple layered layout)"),
        },
        _ => return Err(format!("{}: the output must end in .svg, .html or .dot", output.display())),
    };
    std::fs::write(output, contents).map_err(|e| format!("{}: {e}", output.display()))?;
    Ok(how)
}
