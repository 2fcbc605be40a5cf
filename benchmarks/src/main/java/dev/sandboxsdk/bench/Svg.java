package dev.sandboxsdk.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The benchmarks' plots: standalone SVG files written by the benchmarks themselves (JDK only, no
 * plotting library), so every figure of docs/performance.md comes out of the run that measured it.
 * Shared by the benchmarks, not run on its own.
 *
 * <ul>
 *   <li>{@link Plot}: lines over x (linear or log axes), optional vertical markers for phases;
 *   <li>{@link Bars}: grouped bars with the single runs as dots on each bar.
 * </ul>
 * Every plot has a title and a second line naming the run (date, commit, load, cores; see
 * {@link #runInfo}), axis labels with units and a legend.
 */
public final class Svg {
  private Svg() {}

  public static final int WIDTH = 900;
  public static final int HEIGHT = 460;
  public static final int LEFT = 78;
  public static final int TOP = 62;
  public static final int LEGEND = 250; // width of the legend column on the right
  public static final int BOTTOM = 62;
  public static final String[] COLORS = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
      "#17becf", "#7f7f7f", "#bcbd22"};

  /** "2026-11-25 10:31 UTC, commit abc1234, load 0.52 0.61 0.70, 2 cores": the run a plot comes from. */
  public static String runInfo() {
    String date = ZonedDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'"));
    return String.format(Locale.ROOT, "%s, commit %s, load %s at start, %d cores", date, commit(), Machine.loadAverages(),
        Runtime.getRuntime().availableProcessors());
  }

  /** The checkout's short commit, with "+changes" if tracked files differ from it; "unknown" outside git. */
  public static String commit() {
    String head = git("rev-parse", "--short", "HEAD");
    if (head == null || head.isEmpty()) {
      return "unknown";
    }
    String changes = git("status", "--porcelain", "--untracked-files=no");
    return changes != null && !changes.isEmpty() ? head + "+changes" : head;
  }

  private static String git(String... args) {
    List<String> cmd = new ArrayList<>(List.of("git"));
    cmd.addAll(List.of(args));
    try {
      Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0 ? out : null;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /**
   * Latency by percentile, the x axis in "nines" (x = -log10(1 - p): p50 at 0.3, p90 at 1, p99 at
   * 2), so the tail gets as much room as the body; y in ms on a log axis.
   */
  public static Plot percentiles(String title, String run) {
    return new Plot(title, run, "percentile (of the calls, tail stretched: 0, 90, 99, 99.9 equally spaced)",
        "latency (ms, log scale)").logY()
        .xTicks(new double[] {0, Math.log10(2), 1, 2, 3}, new String[] {"p0", "p50", "p90", "p99", "p99.9"});
  }

  /** Adds a latency series (nanoseconds, any order) to a {@link #percentiles} plot. */
  public static void percentileSeries(Plot plot, String name, long[] nanos, boolean dashed) {
    long[] s = Percentiles.sorted(nanos);
    int n = s.length;
    double[] xs = new double[n];
    double[] ys = new double[n];
    for (int i = 0; i < n; i++) {
      // sample i is the p-th percentile for p = (i+1)/n (index ceil(p*n)-1); the last one is drawn at 1-1/(2n)
      double p = Math.min((i + 1) / (double) n, 1 - 0.5 / n);
      xs[i] = -Math.log10(1 - p);
      ys[i] = s[i] / 1e6;
    }
    plot.series(name, xs, ys, dashed ? "dash" : "line");
  }

  static String esc(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
  }

  static String num(double v) {
    return String.format(Locale.ROOT, "%.1f", v);
  }

  /** A value for a tick label: no trailing zeros, at most 3 decimals. */
  static String label(double v) {
    String s = String.format(Locale.ROOT, "%.3f", v).replaceAll("0+$", "").replaceAll("\\.$", "");
    return s.equals("-0") ? "0" : s;
  }

  /** Ticks of a linear axis from lo to hi: steps of 1, 2 or 5 times a power of ten, about six of them. */
  static double[] linearTicks(double lo, double hi) {
    double raw = (hi - lo) / 6;
    double mag = Math.pow(10, Math.floor(Math.log10(raw)));
    double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
    List<Double> out = new ArrayList<>();
    for (double t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
      out.add(Math.abs(t) < step * 1e-9 ? 0 : t);
    }
    return out.stream().mapToDouble(Double::doubleValue).toArray();
  }

  /** Ticks of a log axis: 1, 2, 5 times powers of ten inside [lo, hi]. */
  static double[] logTicks(double lo, double hi) {
    List<Double> out = new ArrayList<>();
    for (int e = (int) Math.floor(Math.log10(lo)); e <= (int) Math.ceil(Math.log10(hi)); e++) {
      for (int m : new int[] {1, 2, 5}) {
        double t = m * Math.pow(10, e);
        if (t >= lo * 0.999 && t <= hi * 1.001) {
          out.add(t);
        }
      }
    }
    return out.stream().mapToDouble(Double::doubleValue).toArray();
  }

  /** The frame every plot shares: background, title, run line, axis labels, legend. */
  public abstract static class Figure {
    final String title;
    final String run;
    String xLabel;
    String yLabel;
    final List<String[]> legend = new ArrayList<>(); // {name, color, style}

    Figure(String title, String run, String xLabel, String yLabel) {
      this.title = title;
      this.run = run;
      this.xLabel = xLabel;
      this.yLabel = yLabel;
    }

    int plotRight() {
      return WIDTH - LEGEND;
    }

    int plotBottom() {
      return HEIGHT - BOTTOM;
    }

    abstract void body(StringBuilder sb);

    /** Horizontal grid lines with their values at the left. */
    void yGrid(StringBuilder sb, Scale sy, double[] ticks) {
      for (double t : ticks) {
        double y = sy.at(t);
        sb.append("<line x1=\"").append(LEFT).append("\" y1=\"").append(num(y)).append("\" x2=\"").append(plotRight())
            .append("\" y2=\"").append(num(y)).append("\" stroke=\"#e4e4e4\"/>\n");
        sb.append("<text x=\"").append(LEFT - 6).append("\" y=\"").append(num(y + 4)).append("\" text-anchor=\"end\">")
            .append(label(t)).append("</text>\n");
      }
    }

    /** The plot area's border. */
    void frame(StringBuilder sb) {
      sb.append("<rect x=\"").append(LEFT).append("\" y=\"").append(TOP).append("\" width=\"").append(plotRight() - LEFT)
          .append("\" height=\"").append(plotBottom() - TOP).append("\" fill=\"none\" stroke=\"#333\"/>\n");
    }

    String render() {
      StringBuilder sb = new StringBuilder(16_384);
      sb.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(WIDTH).append("\" height=\"").append(HEIGHT)
          .append("\" viewBox=\"0 0 ").append(WIDTH).append(' ').append(HEIGHT)
          .append("\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n");
      sb.append("<title>").append(esc(title)).append("</title>\n");
      sb.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
      sb.append("<text x=\"").append(LEFT).append("\" y=\"24\" font-size=\"16\" font-weight=\"bold\">").append(esc(title))
          .append("</text>\n");
      sb.append("<text x=\"").append(LEFT).append("\" y=\"44\" fill=\"#555\">").append(esc(run)).append("</text>\n");
      body(sb);
      int cx = (LEFT + plotRight()) / 2;
      sb.append("<text x=\"").append(cx).append("\" y=\"").append(HEIGHT - 16).append("\" text-anchor=\"middle\">")
          .append(esc(xLabel)).append("</text>\n");
      int cy = (TOP + plotBottom()) / 2;
      sb.append("<text transform=\"translate(18,").append(cy).append(") rotate(-90)\" text-anchor=\"middle\">")
          .append(esc(yLabel)).append("</text>\n");
      int ly = TOP + 8;
      int lx = plotRight() + 16;
      for (String[] entry : legend) {
        String color = entry[1];
        if (entry[2].startsWith("mark ")) { // a numbered phase marker: its number stands for the swatch
          sb.append("<text x=\"").append(lx + 11).append("\" y=\"").append(ly).append("\" text-anchor=\"middle\" fill=\"#666\">")
              .append(entry[2].substring(5)).append("</text>\n");
        } else if (entry[2].equals("bar")) {
          sb.append("<rect x=\"").append(lx).append("\" y=\"").append(ly - 9).append("\" width=\"22\" height=\"10\" fill=\"")
              .append(color).append("\"/>\n");
        } else {
          sb.append("<line x1=\"").append(lx).append("\" y1=\"").append(ly - 4).append("\" x2=\"").append(lx + 22)
              .append("\" y2=\"").append(ly - 4).append("\" stroke=\"").append(color).append("\" stroke-width=\"")
              .append(entry[2].equals("faint") ? "1" : "2").append('"')
              .append(entry[2].equals("dash") ? " stroke-dasharray=\"6 3\"" : "")
              .append(entry[2].equals("faint") ? " stroke-opacity=\"0.45\"" : "").append("/>\n");
        }
        ly = wrapText(sb, entry[0], lx + 28, ly, 30);
        ly += entry[2].startsWith("mark ") ? 1 : 8;
      }
      sb.append("</svg>\n");
      return sb.toString();
    }

    /** Writes the figure; returns the path (for the benchmark's output). */
    public Path write(Path dir, String fileName) throws IOException {
      Files.createDirectories(dir);
      Path file = dir.resolve(fileName);
      Files.writeString(file, render(), StandardCharsets.UTF_8);
      return file;
    }
  }

  /** Writes text in lines of at most {@code width} chars (breaking at spaces); returns the next y. */
  static int wrapText(StringBuilder sb, String text, int x, int y, int width) {
    List<String> lines = new ArrayList<>();
    StringBuilder line = new StringBuilder();
    for (String word : text.split(" ")) {
      if (line.length() > 0 && line.length() + 1 + word.length() > width) {
        lines.add(line.toString());
        line.setLength(0);
      }
      line.append(line.length() > 0 ? " " : "").append(word);
    }
    lines.add(line.toString());
    for (String l : lines) {
      sb.append("<text x=\"").append(x).append("\" y=\"").append(y).append("\">").append(esc(l)).append("</text>\n");
      y += 15;
    }
    return y;
  }

  /** Lines over x; each series is drawn as a polyline (style "line", "dash" or "faint"). */
  public static final class Plot extends Figure {
    record Series(String name, double[] xs, double[] ys, String style, String color) {}

    record Marker(double x, String label) {}

    final List<Series> series = new ArrayList<>();
    final List<Marker> markers = new ArrayList<>();
    boolean logX;
    boolean logY;
    double[] fixedXTicks;
    String[] fixedXLabels;
    double yMin = Double.NaN;

    public Plot(String title, String run, String xLabel, String yLabel) {
      super(title, run, xLabel, yLabel);
    }

    public Plot logX() {
      logX = true;
      return this;
    }

    public Plot logY() {
      logY = true;
      return this;
    }

    /** A linear y axis that starts here (e.g. 0) rather than at the smallest value. */
    public Plot yFrom(double min) {
      yMin = min;
      return this;
    }

    public Plot xTicks(double[] values, String[] labels) {
      fixedXTicks = values;
      fixedXLabels = labels;
      return this;
    }

    /** Adds a series in the next palette colour; points with a non-finite or (on a log axis) non-positive value are left out. */
    public Plot series(String name, double[] xs, double[] ys, String style) {
      return series(name, xs, ys, style, COLORS[series.size() % COLORS.length]);
    }

    public Plot series(String name, double[] xs, double[] ys, String style, String color) {
      series.add(new Series(name, xs, ys, style, color));
      legend.add(new String[] {name, color, style});
      return this;
    }

    /** A dashed vertical line at x, numbered, with its label in the legend (a phase of the run). */
    public Plot marker(double x, String label) {
      markers.add(new Marker(x, label));
      legend.add(new String[] {label, "#666", "mark " + markers.size()});
      return this;
    }

    private boolean usable(double x, double y) {
      return Double.isFinite(x) && Double.isFinite(y) && (!logX || x > 0) && (!logY || y > 0);
    }

    @Override
    void body(StringBuilder sb) {
      double x0 = Double.POSITIVE_INFINITY;
      double x1 = Double.NEGATIVE_INFINITY;
      double y0 = Double.POSITIVE_INFINITY;
      double y1 = Double.NEGATIVE_INFINITY;
      for (Series s : series) {
        for (int i = 0; i < s.xs().length; i++) {
          if (usable(s.xs()[i], s.ys()[i])) {
            x0 = Math.min(x0, s.xs()[i]);
            x1 = Math.max(x1, s.xs()[i]);
            y0 = Math.min(y0, s.ys()[i]);
            y1 = Math.max(y1, s.ys()[i]);
          }
        }
      }
      for (Marker m : markers) { // a phase that started before the first sample still shows
        if (Double.isFinite(m.x()) && x0 <= x1 && (!logX || m.x() > 0)) {
          x0 = Math.min(x0, m.x());
          x1 = Math.max(x1, m.x());
        }
      }
      if (x0 > x1) { // nothing to draw: an empty frame still says what is missing
        x0 = logX ? 1 : 0;
        x1 = logX ? 10 : 1;
        y0 = logY ? 1 : 0;
        y1 = logY ? 10 : 1;
      }
      if (fixedXTicks != null) {
        x0 = Math.min(x0, fixedXTicks[0]);
        x1 = Math.max(x1, fixedXTicks[fixedXTicks.length - 1]);
      }
      if (!Double.isNaN(yMin) && !logY) {
        y0 = Math.min(y0, yMin);
      }
      if (logY) {
        y0 = Math.pow(10, Math.floor(Math.log10(y0) * 4) / 4); // a little room, on a quarter decade
        y1 = Math.pow(10, Math.ceil(Math.log10(y1) * 4) / 4);
      } else {
        double pad = (y1 - y0) * 0.05 + (y1 == y0 ? 1 : 0);
        y1 += pad;
        if (Double.isNaN(yMin)) {
          y0 -= pad;
        }
      }
      if (x0 == x1) {
        x1 = x0 + 1;
      }
      Scale sx = new Scale(x0, x1, LEFT, plotRight(), logX);
      Scale sy = new Scale(y0, y1, plotBottom(), TOP, logY);
      // grid and ticks
      double[] yt = logY ? logTicks(y0, y1) : linearTicks(y0, y1);
      yGrid(sb, sy, yt);
      double[] xt = fixedXTicks != null ? fixedXTicks : logX ? logTicks(x0, x1) : linearTicks(x0, x1);
      for (int i = 0; i < xt.length; i++) {
        double x = sx.at(xt[i]);
        sb.append("<line x1=\"").append(num(x)).append("\" y1=\"").append(TOP).append("\" x2=\"").append(num(x))
            .append("\" y2=\"").append(plotBottom()).append("\" stroke=\"#e4e4e4\"/>\n");
        sb.append("<text x=\"").append(num(x)).append("\" y=\"").append(plotBottom() + 16).append("\" text-anchor=\"middle\">")
            .append(fixedXLabels != null ? esc(fixedXLabels[i]) : label(xt[i])).append("</text>\n");
      }
      frame(sb);
      markersAndLines(sb, sx, sy, x0, x1);
    }

    /** The phase markers inside [x0, x1] and the series' lines. */
    private void markersAndLines(StringBuilder sb, Scale sx, Scale sy, double x0, double x1) {
      // phase markers: numbered at the top (the legend says what each is), a number that would
      // touch its left neighbour's goes one row lower
      double lastX = Double.NEGATIVE_INFINITY;
      int row = 0;
      for (int i = 0; i < markers.size(); i++) {
        Marker m = markers.get(i);
        if (!Double.isFinite(m.x()) || m.x() < x0 || m.x() > x1) {
          continue;
        }
        double x = sx.at(m.x());
        row = x - lastX < 16 ? row + 1 : 0;
        lastX = x;
        sb.append("<line x1=\"").append(num(x)).append("\" y1=\"").append(TOP).append("\" x2=\"").append(num(x))
            .append("\" y2=\"").append(plotBottom()).append("\" stroke=\"#999\" stroke-dasharray=\"3 3\"/>\n");
        sb.append("<text x=\"").append(num(x + 2)).append("\" y=\"").append(TOP + 12 + 12 * row)
            .append("\" font-size=\"10\" fill=\"#666\">").append(i + 1).append("</text>\n");
      }
      for (Series s : series) {
        StringBuilder points = new StringBuilder();
        for (int i = 0; i < s.xs().length; i++) {
          if (usable(s.xs()[i], s.ys()[i])) {
            points.append(num(sx.at(s.xs()[i]))).append(',').append(num(sy.at(s.ys()[i]))).append(' ');
          }
        }
        sb.append("<polyline fill=\"none\" stroke=\"").append(s.color()).append("\" stroke-width=\"")
            .append(s.style().equals("faint") ? "1" : "2").append('"')
            .append(s.style().equals("dash") ? " stroke-dasharray=\"6 3\"" : "")
            .append(s.style().equals("faint") ? " stroke-opacity=\"0.45\"" : "")
            .append(" stroke-linejoin=\"round\" points=\"").append(points.toString().trim()).append("\"/>\n");
      }
    }
  }

  /** Grouped bars: one group per category, one bar per series, the single runs as dots on the bar. */
  public static final class Bars extends Figure {
    final List<String> categories = new ArrayList<>();
    final Map<String, String> seriesColors = new LinkedHashMap<>();
    final Map<String, double[]> values = new LinkedHashMap<>(); // "category\0series" -> {value, runs...}

    public Bars(String title, String run, String xLabel, String yLabel) {
      super(title, run, xLabel, yLabel);
    }

    /** One bar: its height and the single runs it summarizes (drawn as dots; may be empty). */
    public Bars bar(String category, String series, double value, double... runs) {
      if (!categories.contains(category)) {
        categories.add(category);
      }
      if (!seriesColors.containsKey(series)) {
        String color = COLORS[seriesColors.size() % COLORS.length];
        seriesColors.put(series, color);
        legend.add(new String[] {series, color, "bar"});
      }
      double[] v = new double[runs.length + 1];
      v[0] = value;
      System.arraycopy(runs, 0, v, 1, runs.length);
      values.put(category + "\0" + series, v);
      return this;
    }

    @Override
    void body(StringBuilder sb) {
      double max = 0;
      for (double[] v : values.values()) {
        for (double d : v) {
          if (Double.isFinite(d)) {
            max = Math.max(max, d);
          }
        }
      }
      double[] yt = linearTicks(0, max > 0 ? max * 1.08 : 1);
      double top = yt[yt.length - 1] < max * 1.08 ? max * 1.08 : yt[yt.length - 1];
      Scale sy = new Scale(0, top, plotBottom(), TOP, false);
      yGrid(sb, sy, yt);
      int groups = Math.max(1, categories.size());
      double groupWidth = (plotRight() - LEFT) / (double) groups;
      int nSeries = Math.max(1, seriesColors.size());
      double barWidth = groupWidth * 0.8 / nSeries;
      for (int g = 0; g < categories.size(); g++) {
        String category = categories.get(g);
        double gx = LEFT + g * groupWidth + groupWidth * 0.1;
        int b = 0;
        for (Map.Entry<String, String> s : seriesColors.entrySet()) {
          double[] v = values.get(category + "\0" + s.getKey());
          double bx = gx + b++ * barWidth;
          if (v == null || !Double.isFinite(v[0])) {
            continue;
          }
          double y = sy.at(v[0]);
          sb.append("<rect x=\"").append(num(bx + 1)).append("\" y=\"").append(num(y)).append("\" width=\"")
              .append(num(barWidth - 2)).append("\" height=\"").append(num(plotBottom() - y)).append("\" fill=\"")
              .append(s.getValue()).append("\"/>\n");
          sb.append("<text x=\"").append(num(bx + barWidth / 2)).append("\" y=\"").append(num(y - 4))
              .append("\" text-anchor=\"middle\" font-size=\"10\">").append(String.format(Locale.ROOT, "%.0f", v[0]))
              .append("</text>\n");
          for (int r = 1; r < v.length; r++) {
            sb.append("<circle cx=\"").append(num(bx + barWidth / 2)).append("\" cy=\"").append(num(sy.at(v[r])))
                .append("\" r=\"2.5\" fill=\"white\" stroke=\"#222\"/>\n");
          }
        }
        StringBuilder labels = new StringBuilder();
        wrapText(labels, category, 0, plotBottom() + 16, (int) Math.max(8, groupWidth / 6.5));
        sb.append(labels.toString().replace("<text x=\"0\"",
            "<text text-anchor=\"middle\" x=\"" + num(LEFT + g * groupWidth + groupWidth / 2) + "\""));
      }
      frame(sb);
    }
  }

  /** Maps data values to pixels along one axis. */
  record Scale(double lo, double hi, double from, double to, boolean log) {
    double at(double v) {
      double f = log ? (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) : (v - lo) / (hi - lo);
      return from + f * (to - from);
    }
  }
}
