use super::answer::{check, parse_number, solve, within, Dist, Expected, Given};
use super::*;

fn dist<'a>(logits: &'a [f32], labels: &'a [String]) -> Dist<'a> {
    let text: &'a dyn Fn(u32) -> String =
        Box::leak(Box::new(move |id: u32| labels.get(id as usize).cloned().unwrap_or_default()));
    let resolve: &'a dyn Fn(&str) -> Result<u32, String> = Box::leak(Box::new(move |t: &str| {
        labels.iter().position(|l| l == t).map(|i| i as u32).ok_or_else(|| format!("no {t}"))
    }));
    Dist { logits, history: &[], text, resolve }
}

fn on_logits(q: &Question) -> (Vec<f32>, Vec<String>) {
    match &q.on {
        On::Logits { logits, labels } => (logits.clone(), labels.clone()),
        On::Prompt(_) => panic!("a model question"),
    }
}

fn preset(name: &str) -> Question {
    PRESETS.iter().find(|p| p.name == name).unwrap().question()
}

fn number(s: &answer::Solution) -> f64 {
    match s.expected {
        Expected::Number(v) => v,
        ref other => panic!("{other:?}"),
    }
}

#[test]
fn the_course_questions_have_the_course_answers() {
    // softmax(3, 2, 1, 0.5, 0.1): p_top = e^3 / Σ = 0.6097; at T = 0.5, e^6 / Σ = 0.8595.
    for (name, want) in [("t1", 0.6097), ("t05", 0.8595)] {
        let q = preset(name);
        let (l, labels) = on_logits(&q);
        let s = solve(&q, &dist(&l, &labels)).unwrap();
        assert!((number(&s) - want).abs() < 1e-4, "{name}: {}", number(&s));
        assert!(s.worked.contains("e^("), "{}", s.worked);
        assert_eq!(s.marked, vec![0]);
    }
    let q = preset("greedy");
    let (l, labels) = on_logits(&q);
    let s = solve(&q, &dist(&l, &labels)).unwrap();
    assert_eq!(s.expected, Expected::Values(vec![1.0]));
    assert_eq!(s.shown, "top_k = 1");
    let q = preset("no-cache");
    let s = solve(&q, &dist(&[0.0], &[])).unwrap();
    assert!((number(&s) - 2.0).abs() < 0.01, "{}", s.shown);
    let with = solve(&Question { cache: true, ..q }, &dist(&[0.0], &[])).unwrap();
    assert!((number(&with) - 1.0).abs() < 1e-9);
}

#[test]
fn answers_are_checked_within_the_tolerance_and_not_past_it() {
    // Two equal logits: p = 0.5 exactly; tolerance 0.05.
    let q = Question {
        tolerance: 0.05,
        ..Question::new(Kind::Prob, On::Logits { logits: vec![1.0, 1.0], labels: Vec::new() })
    };
    let labels: Vec<String> = Vec::new();
    let d = dist(&[1.0, 1.0], &labels);
    let s = solve(&q, &d).unwrap();
    assert!(check(&q, &s, Given::Number(0.55), &d));
    assert!(check(&q, &s, Given::Number(0.45), &d));
    assert!(!check(&q, &s, Given::Number(0.5501), &d));
    assert!(!check(&q, &s, Given::Number(0.4499), &d));
    assert!(within(0.86, 0.8595, 0.005) && !within(0.87, 0.8595, 0.005));
}

#[test]
fn count_top_and_greedy_run_the_pipeline() {
    let labels: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
    let logits = [2.0f32, 1.0, 0.0, -1.0];
    let d = dist(&logits, &labels);
    let on = On::Logits { logits: logits.to_vec(), labels: labels.clone() };
    // p = 0.644, 0.237, 0.087, 0.032: the nucleus at 0.9 keeps 3.
    let q =
        Question { settings: vec![(Control::TopP, 0.9)], ..Question::new(Kind::Count, on.clone()) };
    let s = solve(&q, &d).unwrap();
    assert_eq!(number(&s), 3.0);
    assert!(check(&q, &s, Given::Number(3.0), &d) && !check(&q, &s, Given::Number(4.0), &d));
    // A presence penalty on the seen top token moves the top to b.
    let history = [0u32];
    let d = Dist { history: &history, ..dist(&logits, &labels) };
    let q = Question {
        settings: vec![(Control::PresencePenalty, 1.5)],
        ..Question::new(Kind::Top, on.clone())
    };
    let s = solve(&q, &d).unwrap();
    assert_eq!(s.expected, Expected::Token(1));
    assert!(check(&q, &s, Given::Token(1), &d) && !check(&q, &s, Given::Token(0), &d));
    assert!(answer::choices(&q, &d).unwrap().contains(&1));
    // top_p: every p up to p_top (0.644) leaves one token.
    let d = dist(&logits, &labels);
    let q = Question { vary: Control::TopP, ..Question::new(Kind::Greedy, on) };
    let s = solve(&q, &d).unwrap();
    assert_eq!(s.shown, "top_p = 0–0.64");
    assert!(check(&q, &s, Given::Number(0.3), &d));
    assert!(!check(&q, &s, Given::Number(0.7), &d));
    assert!(!check(&q, &s, Given::Number(1.5), &d), "outside the slider");
}

#[test]
fn a_link_round_trips_and_bad_fields_are_notices() {
    let q = Query::parse(
        "q1.kind=prob&q1.logits=3,2,1&q1.labels=x,y,z&q1.temperature=0.5&q1.token=y&q1.tol=0.01\
         &q1.ask=%3Cimg%20src%3Dx%3E&q1.hint=think&q2.preset=t05&q3.preset=nucleus&q3.top_p=0.5\
         &q4.kind=greedy&q4.prompt=Hi&q4.vary=min_p&q5.kind=cost&q5.cache=on",
    );
    let mut notices = Vec::new();
    let quiz = read(&q, &mut notices);
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(quiz.len(), 5);
    assert_eq!(quiz[0].ask, "<img src=x>", "kept as text; the page renders it inert");
    assert_eq!(quiz[0].settings, vec![(Control::Temperature, 0.5)]);
    assert_eq!(quiz[1].preset, Some("t05"));
    assert_eq!(quiz[2].preset, None, "a changed preset is written whole");
    assert_eq!(quiz[2].settings, vec![(Control::TopP, 0.5)]);
    assert_eq!(quiz[3].vary, Control::MinP);
    assert!(quiz[4].cache);
    let params = to_params(&quiz);
    let search: Vec<String> = params
        .iter()
        .map(|(n, v)| {
            format!("{n}={}", form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>())
        })
        .collect();
    let again = read(&Query::parse(&search.join("&")), &mut notices);
    assert_eq!(again, quiz);
    assert!(notices.is_empty(), "{notices:?}");

    let bad = Query::parse(
        "q1.kind=guess&q2.kind=prob&q3.kind=prob&q3.logits=1,nope&q4.kind=count&q4.logits=1,2\
         &q4.top_p=7&q4.vary=seed&q4.tol=-1&q4.cache=maybe&q5.preset=nope",
    );
    let mut notices = Vec::new();
    let quiz = read(&bad, &mut notices);
    assert_eq!(quiz.len(), 1, "only question 4 can be asked");
    let mut none = Vec::new();
    assert_eq!(read(&Query::parse("q19.kind=nope"), &mut none).len(), PRESETS.len());
    assert!(none.iter().any(|n| n.contains("showing the course's questions")), "{none:?}");
    assert_eq!(quiz[0].settings, vec![(Control::TopP, 1.0)]);
    assert_eq!(notices.len(), 8, "{notices:#?}");
    assert!(notices.iter().any(|n| n.contains("kind “guess” is not one of")));
    assert!(notices.iter().any(|n| n.contains("no preset called “nope”")));
}

#[test]
fn no_questions_is_the_course_and_too_many_are_cut() {
    let mut notices = Vec::new();
    let quiz = read(&Query::parse("widget=quiz"), &mut notices);
    assert_eq!(quiz.len(), PRESETS.len());
    assert_eq!(to_params(&quiz).len(), PRESETS.len(), "presets travel by name");
    let many: Vec<String> = (1..=25).map(|n| format!("q{n}.preset=t1")).collect();
    let quiz = read(&Query::parse(&many.join("&")), &mut notices);
    assert_eq!(quiz.len(), MAX_QUESTIONS);
    assert!(notices.iter().any(|n| n.contains("at most 20")), "{notices:?}");
}

#[test]
fn typed_answers_read_as_learners_write_them() {
    assert_eq!(parse_number("0.86"), Ok(0.86));
    assert_eq!(parse_number(" .86 "), Ok(0.86));
    assert_eq!(parse_number("0,86"), Ok(0.86));
    assert!((parse_number("86%").unwrap() - 0.86).abs() < 1e-12);
    assert!(parse_number("").unwrap_err().contains("type an answer"));
    assert!(parse_number("lots").is_err() && parse_number("inf").is_err());
}
