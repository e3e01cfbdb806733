// Analogy Studio pilot experiment (issue 29). Runs from disk: open index.html in a browser.
// The plan (lists, answer orders, images) is in pilot.js as window.PILOT; the list a
// participant gets is ?list=N in the address, or typed on the first screen with their id.
// Each trial's data carries the pilot id, so results from another pilot are refused at import.
/* global initJsPsych, jsPsychSurveyText, jsPsychInstructions, jsPsychHtmlButtonResponse,
   jsPsychHtmlKeyboardResponse, jsPsychPreload, PILOT */
(function () {
  "use strict";
  const P = window.PILOT;
  const params = new URLSearchParams(window.location.search);
  let participant = params.get("pid");
  let listIndex = params.has("list") ? parseInt(params.get("list"), 10) : null;
  let practiceFailures = 0;
  let excluded = "";

  const jsPsych = initJsPsych({
    on_finish: function () {
      const name = `pilot-${P.pilot_id}-${participant || "anonymous"}`;
      jsPsych.data.addProperties({ excluded: excluded });
      jsPsych.data.get().localSave("csv", `${name}.csv`);
      jsPsych.data.get().localSave("json", `${name}.json`);
      const el = jsPsych.getDisplayElement();
      el.innerHTML +=
        `<p id="pilot-saved">Thank you. Your answers were saved as <b>${name}.csv</b> ` +
        `(and .json) in your downloads folder. Please hand them to the experimenter.</p>`;
      document.body.setAttribute("data-pilot-finished", "yes");
    },
  });
  jsPsych.data.addProperties({ pilot_id: P.pilot_id, studio_version: P.studio_version });

  function picture(src, cls) {
    return `<img src="${src}" class="${cls}" alt="">`;
  }

  // the context: rows of pictures, the last row ending in an empty cell
  function contextHtml(item) {
    const rows = item.rows.map(function (row, r) {
      const cells = row.map(function (src) {
        return picture(src, "pilot-cell");
      });
      if (r === item.rows.length - 1) {
        cells.push('<span class="pilot-cell pilot-missing">?</span>');
      }
      return `<div class="pilot-row">${cells.join("")}</div>`;
    });
    return `<div class="pilot-context" data-puzzle="${item.id}">${rows.join("")}</div>`;
  }

  // one puzzle as a trial: answers as buttons (click), or keys 1..k; ``after(data)`` runs
  // once the answer is scored
  function puzzleTrial(item, order, kind, after) {
    const choices = order.map(function (i) {
      return item.answers[i];
    });
    let onKey = null;
    return {
      type: jsPsychHtmlButtonResponse,
      stimulus: contextHtml(item) + `<p class="pilot-prompt">${P.prompt}</p>`,
      choices: choices,
      button_html: function (src, k) {
        return `<button class="jspsych-btn pilot-answer">${picture(src, "pilot-answer-img")}` +
          `<br><span class="pilot-key">${k + 1}</span></button>`;
      },
      on_load: function () {
        onKey = function (e) {
          const k = parseInt(e.key, 10);
          if (k >= 1 && k <= choices.length) {
            const b = document.querySelector(
              `#jspsych-html-button-response-btngroup [data-choice="${k - 1}"]`);
            if (b) { b.click(); }
          }
        };
        document.addEventListener("keydown", onKey);
      },
      data: { kind: kind, puzzle_id: item.id, group: item.group, key_index: item.key,
              answer_order: order.join(" ") },
      on_finish: function (data) {
        document.removeEventListener("keydown", onKey);
        data.participant = participant;
        data.list = listIndex;
        data.chosen_index = data.response === null ? null : order[data.response];
        data.correct = data.chosen_index === item.key;
        if (after) { after(data); }
      },
    };
  }

  function byId(id) {
    return P.items[id];
  }

  const timeline = [];
  timeline.push({
    type: jsPsychPreload,
    images: Object.values(P.items).flatMap(function (it) {
      return it.rows.flat().concat(it.answers);
    }),
  });
  if (participant === null || listIndex === null) {
    timeline.push({
      type: jsPsychSurveyText,
      questions: [
        { prompt: "Your participant id", name: "pid", required: true },
        { prompt: `Your list number (0 to ${P.lists.length - 1}, from the experimenter)`,
          name: "list", required: true },
      ],
      data: { kind: "identify" },
      on_finish: function (data) {
        participant = String(data.response.pid).trim();
        const n = parseInt(data.response.list, 10);
        listIndex = Number.isInteger(n) && n >= 0 && n < P.lists.length ? n : 0;
      },
    });
  }
  timeline.push({
    type: jsPsychInstructions,
    pages: P.instructions,
    show_clickable_nav: true,
    key_forward: "ArrowRight",
    key_backward: "ArrowLeft",
    data: { kind: "instructions" },
  });

  // practice with feedback; failing it P.practice_failures times ends the session (KiVA)
  P.practice.forEach(function (p) {
    const item = byId(p.item);
    let solved = false;
    timeline.push({
      timeline: [
        puzzleTrial(item, p.order, "practice", function (data) {
          solved = data.correct;
          if (!solved) { practiceFailures += 1; }
        }),
        {
          type: jsPsychHtmlKeyboardResponse,
          stimulus: function () {
            return solved
              ? '<p class="pilot-feedback pilot-right">Right.</p>'
              : '<p class="pilot-feedback pilot-wrong">Not this one: look at how the rows go ' +
                "together, then try again.</p>";
          },
          choices: "NO_KEYS",
          trial_duration: P.feedback_ms,
          data: { kind: "feedback" },
          on_finish: function () {
            if (practiceFailures >= P.practice_failures) {
              excluded = "failed-practice";
              jsPsych.abortExperiment(
                "<p>Thank you for your time. This is the end of the session.</p>");
            }
          },
        },
      ],
      loop_function: function () {
        return !solved;
      },
    });
  });

  // the participant's list (attention checks in their places): one trial per position,
  // read from the list when it starts, as the list number is known only after the first
  // screen; keys 1..k press the answer buttons
  timeline.push({
    type: jsPsychHtmlKeyboardResponse,
    stimulus: "<p>Now the puzzles. Press any key to start.</p>",
    data: { kind: "start" },
  });
  function current() {
    return P.lists[listIndex][jsPsych.evaluateTimelineVariable("n")];
  }
  let onKey = null;
  timeline.push({
    timeline: [
      {
        type: jsPsychHtmlButtonResponse,
        stimulus: function () {
          const t = current();
          return contextHtml(byId(t.item)) + `<p class="pilot-prompt">${P.prompt}</p>`;
        },
        choices: function () {
          const t = current();
          return t.order.map(function (i) { return byId(t.item).answers[i]; });
        },
        button_html: function (src, k) {
          return `<button class="jspsych-btn pilot-answer">${picture(src, "pilot-answer-img")}` +
            `<br><span class="pilot-key">${k + 1}</span></button>`;
        },
        on_load: function () {
          const k = current().order.length;
          onKey = function (e) {
            const n = parseInt(e.key, 10);
            if (n >= 1 && n <= k) {
              const b = document.querySelector(
                `#jspsych-html-button-response-btngroup [data-choice="${n - 1}"]`);
              if (b) { b.click(); }
            }
          };
          document.addEventListener("keydown", onKey);
        },
        data: { n: jsPsych.timelineVariable("n") },
        on_finish: function (data) {
          document.removeEventListener("keydown", onKey);
          const t = P.lists[listIndex][data.n];
          const item = byId(t.item);
          data.kind = P.catch_ids.indexOf(t.item) >= 0 ? "catch" : "test";
          data.puzzle_id = t.item;
          data.group = item.group;
          data.participant = participant;
          data.list = listIndex;
          data.position = data.n;
          data.answer_order = t.order.join(" ");
          data.key_index = item.key;
          data.chosen_index = data.response === null ? null : t.order[data.response];
          data.correct = data.chosen_index === item.key;
        },
      },
    ],
    timeline_variables: Array.from({ length: P.list_length }, function (_, n) {
      return { n: n };
    }),
  });

  jsPsych.run(timeline);
})();
