// The inspector's few behaviours: edits ask to confirm, and sliders show their value. No framework, no build step.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form.dataset.confirm;
  if (!question) return;
  if (!window.confirm(question)) { event.preventDefault(); return; }
  const field = form.querySelector("input[name=confirmed]");
  if (field) field.value = "yes";
});
document.addEventListener("input", (event) => {
  const slider = event.target;
  if (slider.type !== "range") return;
  const shown = document.getElementById(slider.id + "-value");
  if (shown) shown.textContent = Number(slider.value).toFixed(2);
});
