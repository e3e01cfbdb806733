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
  // a list number that is no list of the plan is asked for again, never taken as list 0
  function validList(text) {
    const n = /^[0-9]+$/.test(String(text).trim()) ? parseInt(text, 10) : NaN;
    return Number.isInteger(n) && n >= 0 && n < P.lists.length ? n : null;
  }
  // the saved file is named after the participant: letters, digits, - and _ only there
  function fileSafe(text) {
    return String(text).replace(/[^A-Za-z0-9_-]+/g, "_").slice(0, 60) || "anonymous";
  }
  let participant = params.has("pid") && params.get("pid").trim() ? params.get("pid").trim() : null;
  let listIndex = params.has("list") ? validList(params.get("list")) : null;
  let excluded = "";
  // one input answers one puzzle: a key held down (auto-repeat), a double-click or the key
  // that left the previous screen must not answer the next one
  const SETTLE_MS = 250;
  let shownAt = 0;

  const jsPsych = initJsPsych({
    on_finish: function () {
      const name = `pilot-${P.pilot_id}-${fileSafe(participant || "anonymous")}`;
      jsPsych.data.addProperties({ excluded: excluded });
      jsPsych.data.get().localSave("csv", `${name}.csv`);
      jsPsych.data.get().localSave("json", `${name}.json`);
      const saved = document.createElement("p");
      saved.id = "pilot-saved";
      saved.textContent =
        `Thank you. Your answers were saved as ${name}.csv (and .json) in your downloads ` +
        "folder. Please hand them to the experimenter.";
      jsPsych.getDisplayElement().appendChild(saved);
      document.body.setAttribute("data-pilot-finished", "yes");
    },
  });
  jsPsych.data.addProperties({ pilot_id: P.pilot_id, studio_version: P.studio_version });

  function picture(src, cls) {
    return `<img src="${src}" class="${cls}" alt="">`;
  }

  // words from a record (a question's prompt and options) are text, never markup
  function esc(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  // a question in words (KiVA's what changed, and how) over the first row of the context
  function questionHtml(item, q) {
    const row = item.rows[0].map(function (src) { return picture(src, "pilot-cell"); });
    return `<div class="pilot-question" data-puzzle="${item.id}" data-question="${esc(q.id)}">` +
      `<div class="pilot-row">${row.join("")}</div></div>` +
      `<p class="pilot-prompt">${esc(q.prompt)}</p>`;
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
      stimulus: contextHtml(item) + `<p class="pilot-prompt">${esc(P.prompt)}</p>`,
      choices: choices,
      button_html: function (src, k) {
        return `<button class="jspsych-btn pilot-answer">${picture(src, "pilot-answer-img")}` +
          `<br><span class="pilot-key">${k + 1}</span></button>`;
      },
      enable_button_after: SETTLE_MS,
      on_load: function () {
        shownAt = performance.now();
        onKey = function (e) {
          if (e.repeat || performance.now() - shownAt < SETTLE_MS) { return; }
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
      timeline: [{
        type: jsPsychSurveyText,
        preamble: function () {
          return listIndex === null && participant !== null
            ? `<p class="pilot-wrong">That list number is not one of this study's (0 to ` +
              `${P.lists.length - 1}): please type it again.</p>`
            : "";
        },
        questions: [
          { prompt: "Your participant id", name: "pid", required: true },
          { prompt: `Your list number (0 to ${P.lists.length - 1}, from the experimenter)`,
            name: "list", required: true },
        ],
        data: { kind: "identify" },
        on_finish: function (data) {
          participant = String(data.response.pid).trim() || null;
          listIndex = validList(data.response.list);
        },
      }],
      loop_function: function () {
        return participant === null || listIndex === null;
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

  // practice with feedback; failing one practice puzzle P.practice_failures times ends the
  // session (KiVA: a practice trial failed three times excluded the participant)
  P.practice.forEach(function (p) {
    const item = byId(p.item);
    let solved = false;
    let practiceFailures = 0;
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
    stimulus: "<p>Now the puzzles. Press the space bar to start.</p>",
    choices: [" "],
    data: { kind: "start" },
  });
  function current() {
    return P.lists[listIndex][jsPsych.evaluateTimelineVariable("n")];
  }
  // the keys 1..k press the k-th button of the trial on screen
  function keysPress(k) {
    shownAt = performance.now();
    return function (e) {
      if (e.repeat || performance.now() - shownAt < SETTLE_MS) { return; }
      const n = parseInt(e.key, 10);
      if (n >= 1 && n <= k) {
        const b = document.querySelector(
          `#jspsych-html-button-response-btngroup [data-choice="${n - 1}"]`);
        if (b) { b.click(); }
      }
    };
  }
  // question k in words of the current puzzle, where it has one; asked before the pictures
  function questionTrial(k) {
    let onQ = null;
    return {
      timeline: [{
        type: jsPsychHtmlButtonResponse,
        stimulus: function () {
          const item = byId(current().item);
          return questionHtml(item, item.questions[k]);
        },
        choices: function () {
          return byId(current().item).questions[k].options;
        },
        button_html: function (label, i) {
          return `<button class="jspsych-btn pilot-option">${esc(label)} ` +
            `<span class="pilot-key">(${i + 1})</span></button>`;
        },
        enable_button_after: SETTLE_MS,
        on_load: function () {
          onQ = keysPress(byId(current().item).questions[k].options.length);
          document.addEventListener("keydown", onQ);
        },
        data: { n: jsPsych.timelineVariable("n") },
        on_finish: function (data) {
          document.removeEventListener("keydown", onQ);
          const t = P.lists[listIndex][data.n];
          const q = byId(t.item).questions[k];
          data.kind = "question";
          data.question_id = q.id;
          data.puzzle_id = t.item;
          data.participant = participant;
          data.list = listIndex;
          data.position = data.n;
          data.key_index = q.key;
          data.chosen_index = data.response;
          data.correct = data.response === q.key;
        },
      }],
      conditional_function: function () {
        const item = byId(current().item);
        return Array.isArray(item.questions) && item.questions.length > k;
      },
    };
  }
  const mostQuestions = Math.max(0, ...Object.values(P.items).map(function (it) {
    return Array.isArray(it.questions) ? it.questions.length : 0;
  }));
  const asked = Array.from({ length: mostQuestions }, function (_, k) {
    return questionTrial(k);
  });
  let onKey = null;
  timeline.push({
    timeline: [
      ...asked,
      {
        type: jsPsychHtmlButtonResponse,
        stimulus: function () {
          const t = current();
          return contextHtml(byId(t.item)) + `<p class="pilot-prompt">${esc(P.prompt)}</p>`;
        },
        choices: function () {
          const t = current();
          return t.order.map(function (i) { return byId(t.item).answers[i]; });
        },
        button_html: function (src, k) {
          return `<button class="jspsych-btn pilot-answer">${picture(src, "pilot-answer-img")}` +
            `<br><span class="pilot-key">${k + 1}</span></button>`;
        },
        enable_button_after: SETTLE_MS,
        on_load: function () {
          const k = current().order.length;
          shownAt = performance.now();
          onKey = function (e) {
            if (e.repeat || performance.now() - shownAt < SETTLE_MS) { return; }
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
