// English sentences for the accuracy tier, shared by the TTS parity test and the TTS -> STT round trip: plain
// statements, questions, numbers, money, percentages, times, dates, abbreviations, quotes, parentheses, an ellipsis
// and one long sentence. Each is one line a person might type; some are several sentences to espeak-ng ("Mr.").
// A JavaScript module (typed by sentences.d.mts) so the benches read the same list.
export const ACCURACY_SENTENCES = [
  'The quick brown fox jumps over the lazy dog.',
  'Hello, world!',
  'How much does it cost to ship a package to Canada?',
  'Mr. Smith met Dr. Jones at 5 p.m. on Friday.',
  'The meeting is scheduled for March 3rd, 2025, at 10:30 a.m.',
  'She said, "I\'ll be there in 15 minutes."',
  "Call 555-0123 before 9 o'clock tomorrow.",
  'It was 72 degrees Fahrenheit, roughly 22 degrees Celsius.',
  'The population grew by 3.5% in 2023.',
  'Wait... are you serious?',
  'NASA launched the rocket from Cape Canaveral, Florida.',
  'Please read chapters 1 through 12 before the exam; the rest is optional.',
  'Her flight, UA 837, departs at 6:45 in the morning.',
  'The price dropped from $1,299 to $999 overnight.',
  "Don't forget: bring your ID, your ticket, and a pen.",
  'Although the weather forecast had promised clear skies for the entire weekend, a sudden storm rolled in from ' +
    'the west on Saturday afternoon, forcing the organizers to move the concert indoors, delay the opening act by ' +
    'nearly two hours, and refund the tickets of anyone who could not stay late.',
  'Is this the right way to the train station?',
  'The year 1969 saw the first humans walk on the Moon.',
  "'Yes,' she replied, 'that is exactly what I meant.'",
  'On 12/25/2024 the store will be closed.',
  'We measured 0.003 seconds of delay, which is negligible.',
  'The committee approved the budget (with two abstentions).',
  'Turn left, then right, then left again!',
  'Bring snacks, drinks, etc. to the party, e.g. chips and soda.',
  'The 21st century began on January 1st, 2001.',
  'Who wrote the novel Pride and Prejudice?',
  "I can't believe it's already half past eight.",
  'Temperatures will range from -5 to 10 degrees.',
  'The recipe calls for 2 cups of flour and 1/2 teaspoon of salt.',
  'Thank you for calling; your call is important to us.',
];
